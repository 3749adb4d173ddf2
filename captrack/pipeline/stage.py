"""A stage of `captrack run`: one unit of work, the hash of its inputs and its marker.

Kept below the runner, the import stages and the worker processes, which all use it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captrack.files import read_json_or_none, write_atomic
from captrack.pipeline.experiment import config_hash

if TYPE_CHECKING:
    from captrack.pipeline.jobs import Placement, StageJob

__all__ = ["Stage"]


@dataclass
class Stage:
    """One unit of work with the hash of everything it depends on."""

    title: str
    marker: Path
    inputs: dict[str, Any] | Callable[[], dict[str, Any]]  # a callable is read when checked
    action: Callable[[], Any]
    produced: Callable[[], bool] = lambda: True
    """Whether the stage's outputs are on disk (a deleted output makes the stage run again)."""
    rerun_when_reused: bool = False
    """Run the action even when reused (cheap, and later stages need what it sets)."""
    side_by_side: bool = False
    """May run in a worker process beside other such stages (trainings, evaluations of hf models)."""
    needs: tuple[str, ...] = ()
    """Titles of side-by-side stages that must finish first (an evaluation needs its variant's training)."""
    cost: float = 0.0
    """Rough relative cost: among ready side-by-side stages the costliest starts first."""
    job: Callable[[int], StageJob] | None = None
    """The stage as a job (captrack.pipeline.jobs), given the CPU threads per rank; built when the stage is ready to
    run (what it needs has run), so it names the files as they are then. None: the stage runs in the runner."""

    def current_inputs(self) -> dict[str, Any]:
        """The inputs as they are now (files produced by earlier stages included)."""
        return self.inputs() if callable(self.inputs) else self.inputs

    @property
    def digest(self) -> str:
        """Hash of the stage's inputs."""
        return config_hash(self.current_inputs())

    def done(self) -> bool:
        """Whether the marker records this exact configuration and the outputs are still there.

        A marker that cannot be read (empty or cut short by a full disk, not JSON) means "not done".
        """
        if not self.marker.is_file() or not self.produced():
            return False
        recorded = read_json_or_none(self.marker)
        return isinstance(recorded, dict) and recorded.get("config_hash") == self.digest

    def write_marker(self, placement: Placement | None = None, queued: float = 0.0) -> None:
        """Record that the stage ran with its current inputs, where, and how long its job waited before it ran
        (atomically: a reader sees the old marker or this one)."""
        from dataclasses import asdict

        self.marker.parent.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {"config_hash": self.digest, "inputs": self.current_inputs()}
        if placement is not None:
            record["placement"] = asdict(placement) | {"queued_s": round(queued, 3)}
        write_atomic(self.marker, json.dumps(record, default=str, indent=2))

    def placement(self) -> dict[str, Any] | None:
        """Where the stage last ran, as its marker records it (None: no marker, or it ran in the runner)."""
        recorded = read_json_or_none(self.marker) if self.marker.is_file() else None
        found = recorded.get("placement") if isinstance(recorded, dict) else None
        return found if isinstance(found, dict) else None
