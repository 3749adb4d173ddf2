"""Training checkpoints as evaluation inputs: their step and epoch, and `checkpoint-*` folders found by a glob.

A transformers/TRL checkpoint folder holds ``trainer_state.json`` (``global_step``, ``epoch``) beside its
weights; the folder's name (``checkpoint-40``) carries the step too. This module is the one place that
knows those file names.
"""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from captrack.bounded import load_json, read_text
from captrack.errors import InputError
from captrack.schemas import MAX_STEP

__all__ = ["Checkpoint", "TrainingPosition", "find_checkpoints", "has_weights", "run_position", "tag_run_folder",
           "training_position"]

TRAINER_STATE = "trainer_state.json"
# What transformers' save_pretrained writes for the weights (sharded or not; safetensors or torch).
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
_STEP_IN_NAME = re.compile(r"checkpoint-(\d+)$")


@dataclass(frozen=True)
class TrainingPosition:
    """Where in training a checkpoint was saved: optimizer step and (fractional) epoch, each None when unknown."""

    step: int | None = None
    epoch: float | None = None


@dataclass(frozen=True)
class Checkpoint:
    """A saved checkpoint folder and its training step."""

    path: Path
    step: int
    epoch: float | None = None


def training_position(folder: str | Path, from_name: bool = False) -> TrainingPosition:
    """The step and epoch of a checkpoint folder, from its trainer_state.json (with `from_name`, else its name).

    Returns an empty TrainingPosition when the folder tells no step (no trainer_state.json, and with
    `from_name` no ``checkpoint-N`` name), e.g. a hub id.

    Raises:
        InputError: trainer_state.json exists but is unreadable or its global_step is not a whole number.
    """
    if not str(folder):
        return TrainingPosition()
    path = Path(folder)
    state = path / TRAINER_STATE
    try:
        is_file = state.is_file()
    except OSError:  # a hub id or other text that is no path
        is_file = False
    if is_file:
        try:
            data = load_json(read_text(state))
        except (OSError, ValueError) as exc:
            raise InputError(f"{state}: not a readable trainer state ({exc}); fix or delete it, or give --step") from exc
        step = data.get("global_step") if isinstance(data, dict) else None
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= MAX_STEP:
            raise InputError(f"{state}: global_step is {_shown(step)}, not a whole number in 0..{MAX_STEP}; fix the file "
                             "or give --step")
        epoch = data.get("epoch")
        return TrainingPosition(step, float(epoch) if isinstance(epoch, (int, float)) and not isinstance(epoch, bool) else None)
    named = _STEP_IN_NAME.search(path.name) if from_name else None
    if named and int(named.group(1)) > MAX_STEP:
        raise InputError(f"{path}: step {_shown(int(named.group(1)))} in the folder's name is past {MAX_STEP}; rename it")
    return TrainingPosition(int(named.group(1)) if named else None, None)


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def run_position(checkpoint: str, run_folder: Path) -> TrainingPosition:
    """The step of an lm-eval run: its model folder's trainer_state.json, else one beside its results file
    (what captrack.training.CapTrackCallback writes into the run folders it makes)."""
    position = training_position(checkpoint)
    return position if position.step is not None else training_position(run_folder)


def tag_run_folder(folder: Path, step: int, epoch: float | None) -> Path:
    """Write a trainer_state.json holding `step` and `epoch` into an lm-eval run folder (ingest reads the step)."""
    path = folder / TRAINER_STATE
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"global_step": int(step), "epoch": epoch}, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def has_weights(folder: Path) -> bool:
    """Whether a checkpoint folder holds model weights transformers can load."""
    return any((folder / name).is_file() for name in WEIGHT_FILES) or any(folder.glob("model-*.safetensors"))


def find_checkpoints(spec: str | Sequence[str], anchor: Path, where: str, adapters: bool = False) -> list[Checkpoint]:
    """The checkpoint folders a manifest names: a glob (``runs/sft/checkpoint-*``) or a list of folders.

    Paths are relative to `anchor` (the manifest's folder). Sorted by step. With `adapters`, each folder is a PEFT
    adapter saved at its step (``adapter_config.json``, captrack.backends.adapters) rather than a model's weights.

    Raises:
        InputError: a glob matching nothing, a folder missing or without weights (without an adapter: `adapters`), a
            folder whose step cannot be told, or two folders at one step; `where` (e.g. ``variants[0].checkpoints``) is
            named.
    """
    patterns = [spec] if isinstance(spec, str) else list(spec)
    folders: list[Path] = []
    for pattern in patterns:
        full = pattern if Path(pattern).is_absolute() else str(anchor / pattern)
        if glob.has_magic(pattern):
            matched = sorted(Path(p) for p in glob.glob(full) if Path(p).is_dir())
            if not matched:
                raise InputError(f"{where}: {pattern!r} matches no checkpoint folder (looked in {anchor}); "
                                 "point it at the trainer's output_dir/checkpoint-* (nothing was run)")
            folders += matched
        else:
            folders.append(Path(full))
    found: dict[int, Checkpoint] = {}
    for folder in folders:
        if not folder.is_dir():
            raise InputError(f"{where}: checkpoint folder {folder} does not exist (nothing was run)")
        _check_saved(folder, where, adapters)
        position = training_position(folder, from_name=True)
        if position.step is None:
            raise InputError(f"{where}: cannot tell the step of {folder} (no {TRAINER_STATE}, and its name is not "
                             "checkpoint-N); rename it checkpoint-<step> (nothing was run)")
        if position.step in found:
            raise InputError(f"{where}: step {position.step} is given twice ({found[position.step].path} and {folder}); "
                             "each step of a trajectory is one checkpoint (nothing was run)")
        found[position.step] = Checkpoint(folder, position.step, position.epoch)
    return [found[s] for s in sorted(found)]


def _check_saved(folder: Path, where: str, adapters: bool) -> None:
    """Refuse a checkpoint folder without what its sweep evaluates: weights, or (`adapters`) a PEFT adapter."""
    from captrack.backends.adapters import CONFIG_FILE

    adapter = (folder / CONFIG_FILE).is_file()
    if adapters and not adapter:
        raise InputError(f"{where}: checkpoint {folder} holds no {CONFIG_FILE}, so it is not a PEFT adapter, yet "
                         "model_args.pretrained says the checkpoints are adapters over it; point checkpoints at the "
                         "adapter folders, or drop pretrained for full checkpoints (nothing was run)")
    if adapters or has_weights(folder):
        return
    if adapter:
        raise InputError(f"{where}: checkpoint {folder} is a PEFT adapter ({CONFIG_FILE}), not model weights; give "
                         "model_args.pretrained, the base it was trained on, and each checkpoint is evaluated as that "
                         "base with its adapter (nothing was run)")
    raise InputError(f"{where}: checkpoint {folder} holds no model weights ({' or '.join(WEIGHT_FILES[:2])}); "
                     "was it saved with save_only_model or deleted half way? Remove it from the list (nothing was run)")
