"""Hooks for captrack_probe_c5a_forms: each item asked under all its forms (captrack.probes "forms")."""

from typing import Any

from captrack.metrics.form_consistency import form_metrics
from captrack.probes import to_dataset
from captrack.probes.tasks import FormsTask

__all__ = ["FormsTask", "load", "process_results"]


def load(**metadata: Any) -> Any:
    """Generate the items (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("forms", **metadata)


def process_results(doc: dict, results: list[tuple[float, bool]]) -> dict:
    """Accuracy across the item's forms and whether every form picks the same option."""
    return form_metrics(doc, [loglikelihood for loglikelihood, _ in results])
