"""The dtype an experiment trains and evaluates in: the experiment's ``dtype:`` or ``captrack run --dtype``.

``auto`` (the demo's and the curves demo's choice) picks what is fast and exact enough on this machine: bfloat16
where the hardware has bfloat16 arithmetic (a CUDA GPU, or a CPU with AMX or AVX512-BF16), float32 elsewhere. On a
CPU without those instructions PyTorch emulates bfloat16 through float32 conversions: an evaluation or a training
step in bfloat16 there is several times slower than in float32 (the demo's DPO training took 987 s on a 2-core AVX2
host), and float32 is the exact one of the two.

A chosen dtype applies to every checkpoint the run evaluates (``model_args.dtype``) and every training it runs
(``train.bf16``: bfloat16 autocast, or none). An experiment without ``dtype:`` keeps each entry's own settings,
and then is told about a missing bfloat16 unit only where an entry asks for bfloat16.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from captrack.errors import InputError

if TYPE_CHECKING:
    from captrack.pipeline.experiment import Checkpoint, Experiment

__all__ = ["AUTO", "DTYPES", "DtypeChoice", "apply_dtype", "bf16_hardware", "choose_dtype", "uses_bf16"]

AUTO = "auto"
DTYPES = ("bfloat16", "float32", "float16")
"""The dtypes a run may be given (lm-eval's and transformers' names), besides ``auto``."""
_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype a run uses and why (a line said once at the start of the run)."""

    dtype: str
    reason: str


def _cpu_flags(cpuinfo: str | None) -> list[str] | None:
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as handle:
                cpuinfo = handle.read()
        except OSError:
            return None
    return next((line.split(":", 1)[1].split() for line in cpuinfo.splitlines() if line.startswith("flags")), [])


def bf16_hardware(cpuinfo: str | None = None, env: Mapping[str, str] | None = None, cuda: bool | None = None) -> str:
    """What gives bfloat16 arithmetic here ("" where nothing does): a CUDA GPU, or the CPU's AMX / AVX512-BF16 flags.

    ``CAPTRACK_CPU_FLAGS`` (a space-separated flag list) stands in for /proc/cpuinfo's flags: a test, or a user
    who wants the choice made for another host.
    """
    env = os.environ if env is None else env
    if cuda is None:
        cuda = _cuda_available()
    if cuda:
        return "a CUDA GPU"
    override = env.get("CAPTRACK_CPU_FLAGS")
    flags = override.split() if override is not None else _cpu_flags(cpuinfo)
    if flags is None:
        return ""
    found = [flag for flag in _BF16_FLAGS if flag in flags]
    return f"the CPU's {' and '.join(found)}" if found else ""


def _cuda_available() -> bool:
    """Whether torch sees a CUDA GPU (imports torch: only a run that asks `auto` gets here)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def choose_dtype(requested: str, hardware: str | None = None) -> DtypeChoice:
    """The dtype for `requested` (``auto`` or one of DTYPES) on this machine (`hardware`: bf16_hardware's answer).

    Raises:
        InputError: a dtype captrack does not know.
    """
    if requested not in (AUTO, *DTYPES):
        raise InputError(f"dtype {requested!r}: give auto or one of {', '.join(DTYPES)}")
    if requested != AUTO:
        return DtypeChoice(requested, "as asked")
    hardware = bf16_hardware() if hardware is None else hardware
    if hardware:
        return DtypeChoice("bfloat16", f"auto: {hardware} has bfloat16 arithmetic")
    return DtypeChoice("float32", "auto: this CPU has no bfloat16 instructions (no AMX, no AVX512-BF16), where bfloat16 "
                                  "is emulated and several times slower; float32 is also exact")


def _checkpoint(checkpoint: Checkpoint, dtype: str) -> Checkpoint:
    model_args: dict[str, Any] = {**checkpoint.model_args, "dtype": dtype}
    train = {**checkpoint.train, "bf16": dtype == "bfloat16"} if checkpoint.train else checkpoint.train
    return replace(checkpoint, model_args=model_args if not checkpoint.source else checkpoint.model_args, train=train)


def apply_dtype(experiment: Experiment, choice: DtypeChoice) -> Experiment:
    """`experiment` with every checkpoint evaluated in `choice.dtype` and every training in bfloat16 autocast or not;
    where ``auto`` chose, the board's description says which dtype and which class of CPU made its numbers."""
    return replace(experiment, base=_checkpoint(experiment.base, choice.dtype),
                   other_bases=tuple(_checkpoint(c, choice.dtype) for c in experiment.other_bases),
                   variants=tuple(_checkpoint(c, choice.dtype) for c in experiment.variants), dtype=choice.dtype,
                   description=" ".join(filter(None, (experiment.description, made_with(choice)))))


def made_with(choice: DtypeChoice) -> str:
    """What a board made under ``dtype: auto`` says of its numbers' CPU class (empty for a dtype asked by name)."""
    if not choice.reason.startswith(f"{AUTO}:"):
        return ""
    other = "float32" if choice.dtype == "bfloat16" else "bfloat16"
    where = "without" if choice.dtype == "bfloat16" else "with"
    return (f"These numbers were made in {choice.dtype} (dtype: auto; {choice.reason.removeprefix(f'{AUTO}: ')}). "
            f"On a CPU {where} bfloat16 instructions auto picks {other}: a number's last digits, and a verdict near a "
            "decision boundary, may then differ from this board's (not yet measured across CPU classes).")


def uses_bf16(experiment: Experiment) -> bool:
    """Whether any checkpoint of `experiment` is evaluated in bfloat16 or trained under bfloat16 autocast."""
    return any(str(c.model_args.get("dtype", "")).lower() in ("bfloat16", "bf16") or bool(c.train.get("bf16"))
               for c in experiment.checkpoints)
