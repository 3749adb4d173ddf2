"""Hooks for captrack_probe_h1_constraints: generated tasks with verifiable constraints."""

from typing import Any

from captrack.metrics import score
from captrack.probes import to_dataset


def load(**metadata: Any) -> Any:
    """Generate the constrained tasks (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("constraints", **metadata)


def process_results(doc: dict, results: list[str]) -> dict:
    """Whether all, and what share of, the item's constraints hold in the response."""
    return score("instructions", doc, results[0])
