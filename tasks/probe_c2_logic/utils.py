"""Dataset hook for captrack_probe_c2_logic: puzzles generated from metadata.seed / metadata.n."""

from typing import Any

from captrack.probes import to_dataset


def load(**metadata: Any) -> Any:
    """Generate the logic puzzles (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("logic", **metadata)
