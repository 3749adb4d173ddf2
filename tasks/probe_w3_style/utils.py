"""Hooks for captrack_probe_w3_style: generated open requests, scored by captrack's style metrics."""

from typing import Any

from captrack.metrics import score
from captrack.probes import to_dataset

# The captrack scorer of this task (captrack.metrics); drill-down pages show the answer it read.
SCORER = "style"


def load(**metadata: Any) -> Any:
    """Generate the open requests (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("style", **metadata)


def process_results(doc: dict, results: list[str]) -> dict:
    """Length and formatting of the one generated response."""
    return score(SCORER, doc, results[0])
