"""A ``checkpoints:`` variant's saved folders, found and checked when the manifest is read (captrack.pipeline.experiment;
their evaluations: captrack.pipeline.checkpoint_sweep).

Each folder is a step of a trajectory: full weights, or a PEFT (LoRA) adapter saved at that step over one base, the
common case of a LoRA run (its trainer's ``checkpoint-N`` folders hold ``adapter_config.json`` and the adapter's weights,
not the model's)::

    variants:
      - {name: sft, algorithm: SFT, checkpoints: "train/sft/checkpoint-*"}                    # full checkpoints
      - {name: lora, algorithm: SFT, model_args: {pretrained: /ckpt/base}, checkpoints: "train/lora/checkpoint-*"}

``model_args.pretrained`` says the folders are adapters over that base: each step is then evaluated as the base with
that step's adapter, as an ``adapter:`` variant is (captrack.backends.adapters, every folder checked the same way).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.backends.adapters import ADAPTER_KEY, check_adapter
from captrack.errors import InputError
from captrack.paths import expand_path
from captrack.schemas import CheckpointEntry

__all__ = ["SavedSteps", "beside", "saved_steps"]


@dataclass(frozen=True)
class SavedSteps:
    """A sweep's model arguments and its (training step, folder) pairs by step; `adapters`: each folder is a PEFT
    adapter over ``model_args['pretrained']``."""

    model_args: dict[str, Any]
    steps: tuple[tuple[int, Path], ...]
    adapters: bool


def beside(pretrained: str, folder: Path) -> str:
    """A relative `pretrained` found beside the experiment file as an absolute path (the same weights from any current
    folder: the run, ``--status``, a job); an alias, a hub id or an absolute path as written."""
    path = Path(pretrained).expanduser()
    if path.is_absolute() or not pretrained.strip() or not (folder / path).exists():
        return pretrained
    return os.path.normpath(folder / path)


def saved_steps(entry: CheckpointEntry, where: str, folder: Path) -> SavedSteps:
    """The saved checkpoints of variant `entry` (``checkpoints:``), found and checked now.

    Raises:
        InputError: the entry also trains, imports or gives ``model_args.adapter``; a glob matching nothing; a folder
            missing, without weights (or, over ``pretrained``, not an adapter that fits it), or at a step given twice
            (all named; nothing is run).
    """
    from captrack.results.checkpoints import find_checkpoints

    label = f"{where}: variant {entry.name!r}: checkpoints"
    if entry.train or entry.import_ is not None:
        raise InputError(f"{label} replays saved checkpoints, so it cannot also give train or import; keep one "
                         "(nothing was run)")
    if ADAPTER_KEY in entry.model_args:
        raise InputError(f"{label}: give each step's adapter as a checkpoints folder, not also model_args.{ADAPTER_KEY} "
                         "(model_args.pretrained names the base they were trained on; nothing was run)")
    spec = entry.checkpoints or []
    patterns = [str(expand_path(p, folder)) for p in ([spec] if isinstance(spec, str) else spec)]
    if not patterns:
        raise InputError(f"{label} is an empty list; name the checkpoint folders or a glob such as out/checkpoint-*")
    model_args = dict(entry.model_args)
    adapters = bool(model_args.get("pretrained"))
    if adapters:
        model_args["pretrained"] = beside(str(model_args["pretrained"]), folder)
    found = find_checkpoints(patterns, folder, label, adapters=adapters)
    for saved in found if adapters else ():  # each step's adapter checked as an adapter: variant's is
        check_adapter(entry.name, entry.model, {**model_args, ADAPTER_KEY: str(saved.path)}, where, folder,
                      key=f"checkpoints (step {saved.step})")
    return SavedSteps(model_args, tuple((c.step, c.path) for c in found), adapters)
