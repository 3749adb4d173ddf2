"""The vLLM tests' guard: the vLLM environment's interpreter (`make vllm-venv`), or a skip that says why there is none."""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["built_vllm_python"]


def built_vllm_python() -> Path:
    """The built vLLM environment's interpreter; the calling test skips with the reason where none can be used."""
    from captrack.lmeval.vllm_env import unavailable_reason, vllm_python

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM environment: {reason}")
    built = vllm_python()
    if built is None:
        pytest.skip("the vLLM environment is not built: `make vllm-venv` builds it")
    return built
