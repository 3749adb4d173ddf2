"""Hooks for captrack_probe_w3_style: generated open requests, scored by captrack's style metrics."""

from typing import Any

from captrack.metrics import score
from captrack.probes import to_dataset


def load(**metadata: Any) -> Any:
    """Generate the open requests (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("style", **metadata)


def process_results(doc: dict, results: list[str]) -> dict:
    """Length and formatting of the one generated response."""
    return score("style", doc, results[0])
