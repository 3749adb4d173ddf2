"""Whether an official task's data can be read here: from the mirror, the Hugging Face cache or the hub.

Checked without network access, so ``captrack tasks`` can show it and an lm-eval run that selects
tasks without data stops before any model work (captrack/lmeval/preflight.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.official.mirror import DATA_DIR_ENV, config_path

__all__ = ["DataStatus", "data_status", "missing_data_message"]


@dataclass(frozen=True)
class DataStatus:
    """Where a task's data comes from: ``available`` False means a run would fail to load it."""

    needs_data: bool
    available: bool
    source: str  # "generated", "mirror <dir>", "hub cache", "hub (downloaded on first use)", or why not


def data_status(metadata: Mapping[str, Any]) -> DataStatus:
    """The data status of a task from its YAML ``metadata`` (official tasks carry ``config``)."""
    from captrack.errors import DataUnavailableError
    from captrack.official.hub import cached_hub_file, hub_offline

    config = metadata.get("config")
    if not config:
        return DataStatus(needs_data=False, available=True, source="none needed (items generated)")
    mirror = metadata.get("data_dir") or os.environ.get(DATA_DIR_ENV)
    if mirror:
        found = config_path(Path(str(mirror)).expanduser(), str(config)).is_file()
        return DataStatus(True, found, f"mirror {mirror}" if found else f"not in mirror {mirror}")
    try:
        cached = cached_hub_file(str(config), metadata.get("dataset_revision"))
    except DataUnavailableError:
        return DataStatus(True, False, f"pinned to a local mirror; {DATA_DIR_ENV} unset")
    if cached is not None:
        return DataStatus(True, True, "hub cache")
    if hub_offline():
        return DataStatus(True, False, "offline and not in the Hugging Face cache")
    return DataStatus(True, True, "hub (downloaded on first use)")


def missing_data_message(tasks: Sequence[str]) -> str:
    """One line naming the tasks without data and every way to fix it."""
    shown = ", ".join(sorted(tasks)[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    return (
        f"{len(tasks)} selected CapTrack task(s) need the CapTrack dataset, which is not available here "
        f"(no {DATA_DIR_ENV} mirror, not in the Hugging Face cache, hub offline): {shown}. "
        f"Fix: set {DATA_DIR_ENV} to a mirror (`captrack data build --sources DIR --out MIRROR` offline, "
        "`captrack data mirror --out MIRROR` online), or run the suite that needs no data: "
        "--tasks 'captrack_probe_*' (tag captrack-probes)"
    )
