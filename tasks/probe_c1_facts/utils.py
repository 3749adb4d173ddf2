"""Dataset hook for captrack_probe_c1_facts: items generated from metadata.seed / metadata.n."""

from typing import Any

from captrack.probes import to_dataset


def load(**metadata: Any) -> Any:
    """Generate the fact questions (lm-eval passes the task metadata as keyword arguments)."""
    return to_dataset("facts", **metadata)
