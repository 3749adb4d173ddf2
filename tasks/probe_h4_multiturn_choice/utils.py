"""Hooks for captrack_probe_h4_multiturn_choice: contrast items, recall (turn 1 states the fact against turn 1 stating another value), from captrack.probes "multiturn_choice"."""

from typing import Any

from captrack.metrics.form_consistency import contrast_metrics
from captrack.probes import to_dataset
from captrack.probes.tasks import ConversationFormsTask

__all__ = ["ConversationFormsTask", "load", "process_results"]

TWIN_OF = "captrack_probe_h4_multiturn"  # the same turn 1; turn 2 the same at level 1 only
"""The generative task(s) this forced-choice twin asks the items of (captrack.probes.twins reads it)."""


def load(**metadata: Any) -> Any:
    """Generate the items (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("multiturn_choice", **metadata)


def process_results(doc: dict, results: list[tuple[float, bool]]) -> dict:
    """1 when the probe context favours the gold option more than the control context does."""
    return contrast_metrics(doc, [loglikelihood for loglikelihood, _ in results])
