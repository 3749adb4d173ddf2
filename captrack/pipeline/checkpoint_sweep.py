"""Replay of finished trainings: a variant naming ``checkpoints:`` is evaluated at every saved checkpoint.

Each checkpoint is an evaluation stage like any other (resumable, run side by side), its runs under
``runs/<variant>/step-<N>/seed<S>`` and ingested with their step, so `compare` sees a trajectory::

    variants:
      - {name: sft, algorithm: SFT, checkpoints: "train/sft/checkpoint-*"}   # or a list of folders

The folders are found and checked when the manifest is read (captrack.pipeline.experiment; a glob
matching nothing or a checkpoint without weights is refused, named, before any work).
"""

from __future__ import annotations

from pathlib import Path

from captrack.pipeline.experiment import Checkpoint
from captrack.pipeline.layout import WorkFolder

__all__ = ["run_folders"]


def run_folders(work: WorkFolder, checkpoint: Checkpoint, seed: int) -> list[tuple[int | None, Path]]:
    """(training step, run folder) of each evaluation of `checkpoint` with `seed` (step None: not a trajectory)."""
    if not checkpoint.steps:
        return [(None, work.run(checkpoint.name, seed))]
    return [(step, work.run(checkpoint.name, seed, step)) for step, _ in checkpoint.steps]
