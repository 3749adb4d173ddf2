"""Print a memory plan (captrack.backends.memory_plan) as a plain-text table."""

from __future__ import annotations

from typing import Any

from captrack.backends.auto_placement import choose_placement
from captrack.backends.memory_plan import GB, RESERVE_BYTES, model_shape, plan_memory
from captrack.errors import InputError

__all__ = ["DTYPE_BYTES", "plan_lines"]

DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}
_ROW = "{:<11} {:>10} {:>10} {:>11} {:>10} {:>5} {:>10}  {}"


def _gb(value: int) -> str:
    return f"{value / GB:.1f} GB"


def plan_lines(config: dict[str, Any], gpus: int, gpu_mem: int, dtype: str = "bfloat16", seq_len: int = 4096,
               batch_size: int = 8, gpus_per_node: int | None = None) -> list[str]:
    """The plan as printable lines: a header, one row per mode, and which modes fit."""
    shape = model_shape(config)
    width = DTYPE_BYTES[dtype]
    plans = plan_memory(config, gpus, gpu_mem, width, seq_len, batch_size, gpus_per_node)
    lines = [f"{shape.family}: {shape.params / 1e9:.2f}B parameters = {_gb(shape.params * width)} in {dtype}; "
             f"{gpus} GPU(s) x {gpu_mem / GB:.0f} GB; batch {batch_size} x {seq_len} tokens; "
             f"{RESERVE_BYTES // GB} GB reserve per GPU",
             _ROW.format("mode", "weights", "KV cache", "logits+act", "total", "fits", "host RAM", "note")]
    for plan in plans:
        lines.append(_ROW.format(plan.mode, _gb(plan.weights), _gb(plan.kv_cache), _gb(plan.logits + plan.activations),
                                 _gb(plan.total), "yes" if plan.fits else "no",
                                 f"{plan.host / GB:.0f} GB" if plan.host else "-", plan.note).rstrip())
    fitting = [p.mode for p in plans if p.fits]
    lines.append("per GPU except host RAM (per node). fits: "
                 + (", ".join(fitting) if fitting else "none; add GPUs or lower --batch-size / --seq-len"))
    try:  # what captrack-ds mode=auto picks on one node of these GPUs (host RAM not checked here)
        chosen = choose_placement(config, [gpu_mem] * min(gpus, gpus_per_node or gpus), None, width, seq_len, batch_size,
                                  nvme_path="NVMe")
        lines.append(f"mode=auto: mode={chosen.mode} offload={chosen.offload} on {chosen.gpus} GPU(s): {chosen.reason}")
    except InputError as exc:
        lines.append(f"mode=auto: refuses: {exc}")
    return lines
