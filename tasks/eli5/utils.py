"""Hooks for the captrack_eli5_* tasks: rows from the CapTrack mirror, scored by captrack.official.tasks."""

from captrack.official.tasks import load, nanmean, process_results

__all__ = ["load", "nanmean", "process_results"]
