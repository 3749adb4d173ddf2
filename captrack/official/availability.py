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

__all__ = ["DataStatus", "available_tasks", "data_status", "mirror_in_use", "missing_data_message", "task_metadata"]


@dataclass(frozen=True)
class DataStatus:
    """Where a task's data comes from: ``available`` False means a run would fail to load it."""

    needs_data: bool
    available: bool
    source: str  # "generated", "mirror <dir>", "hub cache", "hub (downloaded on first use)", or why not


def data_status(metadata: Mapping[str, Any]) -> DataStatus:
    """The data status of a task from its YAML ``metadata`` (official tasks carry ``config``)."""
    from captrack.errors import DataUnavailableError
    from captrack.official.hub import cached_hub_file, hub_offline, hub_reachable

    config = metadata.get("config")
    if not config:
        return DataStatus(needs_data=False, available=True, source="none needed (items generated)")
    mirror = mirror_in_use(metadata)
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
    if not hub_reachable():
        return DataStatus(True, False, "hub unreachable and not in the Hugging Face cache")
    return DataStatus(True, True, "hub (downloaded on first use)")


def mirror_in_use(metadata: Mapping[str, Any] | None = None) -> str | None:
    """The mirror official tasks read: ``metadata.data_dir``, else $CAPTRACK_DATA_DIR (None: the hub)."""
    found = (metadata or {}).get("data_dir") or os.environ.get(DATA_DIR_ENV)
    return str(found) if found else None


def available_tasks(folder: Path, metadata: Mapping[str, Any] | None = None) -> list[str]:
    """The tasks under `folder` (one ``<bench>/<bench>.yaml`` each) that can run here: generated, or data found."""
    out = []
    for path in sorted(folder.glob("*/*.yaml"), key=lambda p: p.stem):
        if data_status({**task_metadata(path), **(metadata or {})}).available:
            out.append(f"captrack_{path.stem}")
    return out


def missing_data_message(tasks: Sequence[str], mirror: str | None = None) -> str:
    """One line naming the tasks without data, where captrack looked, and every way to fix it."""
    select = "--tasks \"$(captrack tasks --available)\" (the tasks whose data is here)"
    if mirror:
        return (
            f"{len(tasks)} selected CapTrack task(s) are not in the mirror {mirror} ({DATA_DIR_ENV} or metadata.data_dir): "
            f"{', '.join(sorted(tasks))}. Fix: run {select}, or add them to the mirror "
            "(`captrack data mirror --out MIRROR` online; `captrack data build` says why a config cannot be built offline)"
        )
    shown = ", ".join(sorted(tasks)[:3]) + (f" and {len(tasks) - 3} more" if len(tasks) > 3 else "")
    return (
        f"{len(tasks)} selected CapTrack task(s) need the CapTrack dataset, which is not available here "
        f"(no {DATA_DIR_ENV} mirror, not in the Hugging Face cache, hub offline or unreachable): {shown}. "
        f"Fix: set {DATA_DIR_ENV} to a mirror (`captrack data build --sources DIR --out MIRROR` offline, "
        "`captrack data mirror --out MIRROR` online), or run the suite that needs no data: "
        f"--tasks 'captrack_probe_*' (tag captrack-probes), or {select}"
    )


def task_metadata(path: Path) -> dict[str, Any]:
    """A task YAML's ``metadata`` (``!function`` values kept as text; includes are not needed for it)."""
    import yaml

    class _Loader(yaml.SafeLoader):
        pass

    _Loader.add_constructor("!function", lambda loader, node: str(loader.construct_scalar(node)))  # type: ignore[arg-type]
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    meta = config.get("metadata") or {}
    return dict(meta) if isinstance(meta, dict) else {}
