"""Hooks for the captrack_hellaswag_* tasks: rows from the CapTrack mirror, scored by captrack.official.tasks."""

from captrack.official.tasks import load, nanmean, process_results

__all__ = ["load", "nanmean", "process_results"]
