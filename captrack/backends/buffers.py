"""Keep every buffer of a placed model in the dtype transformers gave it.

`deepspeed.init_inference(model, dtype=torch.bfloat16)` casts every floating buffer of the module,
the rotary embedding's `inv_freq` included, which transformers keeps in float32: rotary angles then
lose precision and loglikelihoods move by up to a third of a nat on a 8B model (measured on an H100,
../shared/measurements/gpu-h100-2026-11-25.md). A snapshot taken right after transformers loaded the
model remembers each buffer's dtype (and, for those a cast could change, the tensor itself); after
placement, changed buffers get their original tensor back, and any difference that is left fails
loudly with the buffer's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from captrack.errors import CaptrackError

__all__ = ["BufferDtypeError", "BufferSnapshot", "keep_buffer_dtypes", "snapshot_buffers"]


class BufferDtypeError(CaptrackError):
    """DeepSpeed changed a buffer's dtype (or dropped a buffer) and captrack could not undo it."""


@dataclass(frozen=True)
class BufferSnapshot:
    """Buffer dtypes as transformers loaded them, and the tensors that a cast to `dtype` would change."""

    dtype: str  # the placement dtype (torch dtype name)
    dtypes: dict[str, str] = field(default_factory=dict)  # buffer name -> torch dtype name
    originals: dict[str, Any] = field(default_factory=dict)  # buffer name -> the tensor transformers built


def _name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def snapshot_buffers(model: Any, dtype: str) -> BufferSnapshot:
    """Record every buffer's dtype; keep a reference to each floating buffer not already in `dtype`.

    A reference, not a copy: a cast builds a new tensor and leaves the original untouched, and these
    buffers (rotary frequencies, scales) are small.
    """
    dtypes, originals = {}, {}
    for name, buffer in model.named_buffers():
        dtypes[name] = _name(buffer.dtype)
        if buffer.is_floating_point() and _name(buffer.dtype) != dtype:
            originals[name] = buffer
    return BufferSnapshot(dtype, dtypes, originals)


def _restore(model: Any, name: str, original: Any) -> bool:
    """Put `original` back as buffer `name` on the device the placed buffer lives on; False if it cannot."""
    owner_name, _, leaf = name.rpartition(".")
    owner = model.get_submodule(owner_name) if owner_name else model
    current = owner._buffers.get(leaf)
    if current is None or tuple(current.shape) != tuple(original.shape):
        return False  # dropped or resharded: nothing to put back in its place
    owner._buffers[leaf] = original.to(device=current.device)
    return True


def keep_buffer_dtypes(model: Any, snapshot: BufferSnapshot, replaced_layers: bool = False) -> list[str]:
    """Undo DeepSpeed's buffer casts on `model`, then check every buffer kept its dtype.

    Args:
        model: the placed module (``engine.module``).
        snapshot: taken right after transformers loaded the model, before any DeepSpeed call.
        replaced_layers: DeepSpeed's kernel injection swapped transformers' decoder layers for its
            own, so their buffers are gone by design; only buffers that remain are checked.

    Returns:
        The names of the buffers whose original tensor was put back.

    Raises:
        BufferDtypeError: a buffer is still in another dtype than transformers gave it, or was dropped.
    """
    restored = []
    for name, buffer in list(model.named_buffers()):
        before = snapshot.dtypes.get(name)
        if before is None or _name(buffer.dtype) == before:
            continue
        original = snapshot.originals.get(name)
        if original is not None and _restore(model, name, original):
            restored.append(name)
    after = {name: _name(buffer.dtype) for name, buffer in model.named_buffers()}
    changed = [f"{name} ({before} -> {after[name]})" for name, before in snapshot.dtypes.items()
               if name in after and after[name] != before]
    dropped = [] if replaced_layers else [name for name in snapshot.dtypes if name not in after]
    if changed or dropped:
        problems = (["changed " + ", ".join(changed)] if changed else []) + (
            ["dropped " + ", ".join(dropped)] if dropped else [])
        raise BufferDtypeError(
            f"DeepSpeed placement altered buffers that transformers keeps as loaded: {'; '.join(problems)}. "
            "The model's numbers would differ from lm-eval's hf backend; report this with the model's "
            "config.json, or evaluate with --model hf.")
    return restored
