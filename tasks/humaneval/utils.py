"""Hooks for the captrack_humaneval_* tasks: rows from the CapTrack mirror, scored by captrack.official.tasks."""

from typing import Any

from captrack.metrics.sandbox import sandbox_kind
from captrack.official.tasks import load as _load
from captrack.official.tasks import nanmean, process_results

__all__ = ["load", "nanmean", "process_results"]


def load(**metadata: Any) -> Any:
    """The task's rows, once the code sandbox is known to work (refuses before any generation if not)."""
    sandbox_kind()
    return _load(**metadata)
