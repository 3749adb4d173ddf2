"""Hooks for captrack_mmlu_pro_full: rows from the CapTrack mirror, scored by captrack.official.tasks."""

from captrack.official.tasks import load, nanmean, process_results

__all__ = ["load", "nanmean", "process_results"]
