"""The vLLM tests' guard: the vLLM environment's interpreter (`make vllm-venv`), or a skip that says why there is none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

__all__ = ["VLLM_IN_SLURM", "built_vllm_python"]


VLLM_IN_SLURM = pytest.mark.skipif(not os.environ.get("CAPTRACK_VLLM_SLURM"), reason=(
    "vLLM servers inside Slurm jobs: five engine starts, about 17 min on 2 cores (served job 145 s, its scancel 137 s, "
    "the served 3-checkpoint array 527 s, its kill 91 s), over CI's budget beside the other vLLM tests; set "
    "CAPTRACK_VLLM_SLURM=1 to run them"))
"""For the served-in-Slurm files (issue 55); the served lifecycle itself runs in CI (tests/lmeval/test_served_vllm.py)."""


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
