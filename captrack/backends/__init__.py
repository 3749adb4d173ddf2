"""lm-eval model backends shipped by captrack (registered by `captrack-eval`)."""

from __future__ import annotations

__all__ = ["register_backends"]


def register_backends() -> list[str]:
    """Register captrack's lm-eval model backends; returns the names registered.

    lm-eval's own models are imported first so that ours never shadow theirs.
    """
    import lm_eval.models  # noqa: F401  (populates lm-eval's model registry first)

    return []
