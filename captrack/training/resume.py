"""What `CapTrackCallback` finds in its output folder when a training is launched again into it.

A relaunch resuming from a checkpoint at step S keeps the runs an earlier launch recorded at steps ≤ S (the
same trajectory up to there) and evaluates again, replacing, every step past S it reaches; a relaunch from
scratch (S = 0) replaces everything it reaches, the base included. Only the files lm-eval and the callback
write into a run folder are removed when one is replaced.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from captrack.errors import InputError

__all__ = ["Resumed", "check_writable", "clear_run_folder", "recorded_resume"]

_STEP_FOLDER = re.compile(r"step-(\d+)$")


@dataclass(frozen=True)
class Resumed:
    """Steps an earlier launch recorded: kept (at or before the step training resumes from) or to be replaced."""

    kept: tuple[int, ...] = ()
    replaced: tuple[int, ...] = ()
    base: bool = False  # the folder holds a base run

    def describe(self, folder: Path) -> str:
        """One line saying what is kept and what is evaluated again."""
        said = [f"{folder} holds runs of an earlier launch"]
        if self.kept:
            said.append(f"kept: step(s) {', '.join(map(str, self.kept))} (at or before the resumed step)")
        if self.replaced:
            said.append(f"replaced when reached: step(s) {', '.join(map(str, self.replaced))}")
        return "; ".join(said)


def _has_run(folder: Path) -> bool:
    from captrack.results.runfiles import results_files

    return folder.is_dir() and any(results_files(folder))


def recorded_resume(output_dir: Path, start: int) -> Resumed:
    """The steps recorded in `output_dir` split at `start`, the step training (re)starts from."""
    steps = sorted(int(m.group(1)) for child in (output_dir.iterdir() if output_dir.is_dir() else ())
                   if (m := _STEP_FOLDER.match(child.name)) and _has_run(child))
    return Resumed(kept=tuple(s for s in steps if 0 < start and s <= start),
                   replaced=tuple(s for s in steps if start == 0 or s > start), base=_has_run(output_dir / "base"))


def clear_run_folder(folder: Path) -> None:
    """Remove the run files (results, samples, verdicts, trainer_state) under `folder`, and the folders left empty."""
    from captrack.results.checkpoints import TRAINER_STATE
    from captrack.results.runfiles import run_output_files

    if not folder.is_dir():
        return
    for path in [*run_output_files(folder), *folder.rglob(TRAINER_STATE)]:
        path.unlink()
    for path in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            path.rmdir()  # only when empty


def check_writable(folder: Path) -> None:
    """Make `folder` and write a file into it now, so that a bad folder fails before training, not at step N.

    Raises:
        InputError: the folder cannot be made or written (its path and the reason named).
    """
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".captrack-write-check.", dir=folder)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"CapTrackCallback: output folder {folder} cannot be written ({exc.strerror or exc}); give "
                         "output_dir=<a folder you can write>") from exc
