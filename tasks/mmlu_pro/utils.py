"""Hooks for the captrack_mmlu_pro_* tasks: rows from the CapTrack mirror, scored by captrack.data.tasks."""

from captrack.data.tasks import load, nanmean, process_results

__all__ = ["load", "nanmean", "process_results"]
