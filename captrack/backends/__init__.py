"""lm-eval model backends shipped by captrack (registered by `captrack-eval`)."""

from __future__ import annotations

__all__ = ["BACKENDS", "LOCAL_HF", "register_backends"]

# lm-eval model name -> "module:class", registered lazily: deepspeed is imported on first use only.
BACKENDS = {
    "captrack-ds": "captrack.backends.deepspeed_lm:DeepSpeedLM",
    "captrack-hf": "captrack.backends.shared_prefix:SharedPrefixLM",  # hf, each context run once for its options
    "captrack-replay": "captrack.backends.replay:ReplayLM",  # generations made elsewhere (`captrack import`)
}

LOCAL_HF = ("hf", "captrack-hf")
"""Backends that load `pretrained` (a local folder or alias) into this process: one CPU worker each can run them
side by side, and their `pretrained` is checked before any work."""


def register_backends() -> list[str]:
    """Register captrack's lm-eval model backends; returns the names registered.

    lm-eval's own models are imported first so that ours never shadow theirs.
    """
    import lm_eval.models  # noqa: F401  (populates lm-eval's model registry first)
    from lm_eval.api.registry import model_registry

    for name, target in BACKENDS.items():
        if name not in model_registry:  # a second call finds the class already materialised
            model_registry.register(name, target=target)
    return list(BACKENDS)
