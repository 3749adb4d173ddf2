"""lm-eval model backends shipped by captrack (registered by `captrack-eval`)."""

from __future__ import annotations

__all__ = ["BACKENDS", "LOCAL_HF", "check_model_name", "register_backends"]

# lm-eval model name -> "module:class", registered lazily: deepspeed is imported on first use only.
BACKENDS = {
    "captrack-ds": "captrack.backends.deepspeed_lm:DeepSpeedLM",
    "captrack-hf": "captrack.backends.shared_prefix:SharedPrefixLM",  # hf, each context run once for its options
    "captrack-replay": "captrack.backends.recorded_answers:ReplayLM",  # generations made elsewhere (`captrack import`)
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


def check_model_name(name: str, what: str) -> None:
    """Refuse a model type that neither lm-eval nor captrack registers, before any work (a typo such as
    ``captrack_hf`` would otherwise fail only when that checkpoint's evaluation starts).

    Raises:
        UnknownNameError: ``unknown <what> 'captrack_hf'; did you mean 'captrack-hf'?``
    """
    if name in BACKENDS:
        return
    import lm_eval.models  # noqa: F401  (fills lm-eval's registry; its model classes load lazily)
    from lm_eval.api.registry import model_registry

    known = [*model_registry, *BACKENDS]
    if name not in known:
        from captrack.errors import UnknownNameError

        raise UnknownNameError(what, name, known)
