"""Hooks for captrack_probe_h1_constraints: generated tasks with verifiable constraints."""

from typing import Any

from captrack.metrics import score
from captrack.probes import to_dataset

# The captrack scorer of this task (captrack.metrics); drill-down pages show the answer it read.
SCORER = "instructions"


def load(**metadata: Any) -> Any:
    """Generate the constrained tasks (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("constraints", **metadata)


def process_results(doc: dict, results: list[str]) -> dict:
    """Whether all, and what share of, the item's constraints hold in the response."""
    return score(SCORER, doc, results[0])
