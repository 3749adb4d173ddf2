"""Hooks for captrack_probe_w2_false_premise_choice: contrast items (probe and control context, same two options) from captrack.probes "false_premise_choice"."""

from typing import Any

from captrack.metrics.form_consistency import contrast_metrics
from captrack.probes import to_dataset
from captrack.probes.tasks import FormsTask

__all__ = ["FormsTask", "load", "process_results"]

TWIN_OF = "captrack_probe_w2_false_premise"
"""The generative task(s) this forced-choice twin asks the items of (captrack.probes.twins reads it)."""


def load(**metadata: Any) -> Any:
    """Generate the items (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("false_premise_choice", **metadata)


def process_results(doc: dict, results: list[tuple[float, bool]]) -> dict:
    """1 when the probe context favours the gold option more than the control context does."""
    return contrast_metrics(doc, [loglikelihood for loglikelihood, _ in results])
