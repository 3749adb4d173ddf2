"""`mode=auto`: the cheapest DeepSpeed placement that fits, from the config, the GPUs and the planner.

Cheapest first: plain per-rank weights on one GPU (mode=tp at world 1: no communication at all),
then tensor parallel across the node's GPUs, then ZeRO-3 partitioning across them, and only when
nothing else fits ZeRO-3 with the weights offloaded to CPU RAM, then to NVMe. ZeRO-3 gathers every
layer's weights before using them: on one H100 that held the model it ran at 0.25-0.28x hf's
loglikelihood throughput (../shared/measurements/gpu-h100-2026-11-25.md), so it is never chosen where
a tensor-parallel placement fits, and a user who asks for it there is warned.

Everything here is pure arithmetic over `memory_plan.plan_memory` (no torch): tests pass fake device
memory, the backend passes what the machine reports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from captrack.backends.memory_plan import GB, ModePlan, plan_memory
from captrack.backends.options import tp_mode_for
from captrack.errors import InputError

__all__ = ["Placement", "choose_placement", "zero3_warning"]


@dataclass(frozen=True)
class Placement:
    """What `mode=auto` chose: a captrack-ds mode, its offload target, how many ranks it needs, and why."""

    mode: str  # tp | autotp | zero3
    offload: str  # none | cpu | nvme
    gpus: int  # ranks (one per GPU) the placement needs; 1 on CPU
    reason: str


def _gb(value: float) -> str:
    return f"{value / GB:.1f} GB"


def _plans(config: dict[str, Any], gpus: int, gpu_mem: int, dtype_bytes: int, seq_len: int,
           batch_size: int) -> dict[str, ModePlan]:
    return {p.mode: p for p in plan_memory(config, gpus, gpu_mem, dtype_bytes, seq_len, batch_size)}


def choose_placement(config: dict[str, Any], gpu_free: Sequence[int], host_free: int | None, dtype_bytes: int = 2,
                     seq_len: int = 2048, batch_size: int = 8, nvme_path: str | None = None) -> Placement:
    """Pick the cheapest placement of the model `config` describes that fits the free memory.

    Args:
        config: the checkpoint's config.json (text part) as a dict.
        gpu_free: free bytes on each visible GPU of this node; empty on a CPU-only machine.
        host_free: available host RAM in bytes (for CPU offload of the weights); None: not checked.
        dtype_bytes: bytes per parameter (2 for bfloat16).
        seq_len: longest request in tokens (lm-eval's max_length).
        batch_size: requests per forward pass.
        nvme_path: a folder on a local NVMe disk; NVMe offload is chosen only with one.

    Raises:
        InputError: nothing fits; the message gives each placement's need and what to change.
    """
    tp = tp_mode_for(config)
    if not gpu_free:
        return Placement(tp, "none", 1, "no GPU visible: the model's own weights in one process on CPU")
    per_gpu, count = min(gpu_free), len(gpu_free)
    need = f"batch {batch_size} x {seq_len} tokens"
    one = _plans(config, 1, per_gpu, dtype_bytes, seq_len, batch_size)
    if one[tp].fits:
        return Placement(tp, "none", 1, f"fits one GPU: {_gb(one[tp].total)} planned ({need}) of {_gb(per_gpu)} "
                                        "free; plain per-rank weights, no communication")
    every = _plans(config, count, per_gpu, dtype_bytes, seq_len, batch_size) if count > 1 else one
    if count > 1 and every[tp].fits:
        return Placement(tp, "none", count, f"needs {_gb(one[tp].total)} on one GPU ({need}), more than the "
                                            f"{_gb(per_gpu)} free; tensor parallel across the node's {count} GPUs "
                                            f"plans {_gb(every[tp].total)} per GPU")
    if count > 1 and every["zero3"].fits:
        return Placement("zero3", "none", count, f"tensor parallel does not fit {count} x {_gb(per_gpu)} "
                                                 f"({_gb(every[tp].total)} per GPU); ZeRO-3 across them plans "
                                                 f"{_gb(every['zero3'].total)}")
    cpu = every["zero3+cpu"]
    if cpu.fits and (host_free is None or cpu.host <= host_free):
        ram = f"{_gb(cpu.host)} of {_gb(host_free)} free" if host_free is not None else f"{_gb(cpu.host)} needed"
        return Placement("zero3", "cpu", count, f"no GPU placement fits {count} x {_gb(per_gpu)} free (tensor "
                                                f"parallel plans {_gb(every[tp].total)} per GPU); ZeRO-3 with the "
                                                f"weights in CPU RAM ({ram})")
    nvme = every["zero3+nvme"]
    if nvme.fits and nvme_path:
        return Placement("zero3", "nvme", count, f"neither GPU memory ({_gb(every[tp].total)} per GPU under tensor "
                                                 f"parallel) nor CPU RAM ({_gb(cpu.host)} needed, {_gb(host_free or 0)} "
                                                 f"free) holds the weights; ZeRO-3 offloaded to NVMe at {nvme_path}")
    raise InputError(
        f"{config.get('model_type', 'this model')} does not fit this machine ({count} GPU(s) x {_gb(per_gpu)} free, "
        f"{_gb(host_free or 0)} host RAM free, {need}): tensor parallel plans {_gb(every[tp].total)} per GPU, "
        f"ZeRO-3 with CPU offload needs {_gb(cpu.host)} of host RAM. Add GPUs, lower --batch_size or max_length, "
        "or pass mode=zero3,offload=nvme,nvme_path=/a/local/nvme/folder.")


def zero3_warning(config: dict[str, Any], gpu_free: Sequence[int], dtype_bytes: int = 2, seq_len: int = 2048,
                  batch_size: int = 8) -> str | None:
    """A warning for an explicit mode=zero3 on GPUs where tensor parallel would fit, else None."""
    if not gpu_free:
        return None
    tp = tp_mode_for(config)
    for gpus in sorted({1, len(gpu_free)}):
        plan = _plans(config, gpus, min(gpu_free), dtype_bytes, seq_len, batch_size)[tp]
        if plan.fits:
            return (f"mode=zero3 on GPUs that hold the model: mode={tp} on {gpus} GPU(s) fits "
                    f"({_gb(plan.total)} per GPU planned) and ZeRO-3 measured 0.25-0.28x hf's loglikelihood "
                    "throughput on an H100 that held the model; use mode=auto or mode=tp unless you need ZeRO-3")
    return None
