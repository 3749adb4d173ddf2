"""Before any model work, check that every selected official task can read its data here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from captrack.errors import DataUnavailableError

__all__ = ["check_task_data", "missing_data"]


def _leaves(manager: Any, names: Sequence[Any], seen: set[str]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(task, YAML config) for every task the names select, tags and groups expanded (lm-eval's index)."""
    index = getattr(manager, "_index", {})
    for name in names:
        if not isinstance(name, str) or name in seen or name not in index:
            continue  # inline configs and unknown names are lm-eval's business
        seen.add(name)
        entry = index[name]
        kind = getattr(entry.kind, "name", "")
        if kind == "TAG":
            yield from _leaves(manager, sorted(entry.tags), seen)
        elif kind == "GROUP":
            members = (entry.cfg or {}).get("task") or []
            yield from _leaves(manager, [m for m in members if isinstance(m, str)], seen)
        elif entry.cfg is not None:
            yield name, entry.cfg


def missing_data(manager: Any, names: Sequence[Any], metadata: Mapping[str, Any] | None = None) -> list[str]:
    """The selected official tasks whose data is neither in a mirror, the HF cache, nor downloadable now."""
    from captrack.official.availability import data_status
    from captrack.official.mirror import HUB_DATASET

    missing = []
    for task, cfg in _leaves(manager, names, set()):
        task_meta = cfg.get("metadata") or {}
        if not isinstance(task_meta, Mapping) or task_meta.get("dataset") != HUB_DATASET:
            continue  # not an official CapTrack task
        if not data_status({**task_meta, **(metadata or {})}).available:
            missing.append(task)
    return missing


def check_task_data(manager: Any, names: Sequence[Any], metadata: Mapping[str, Any] | None = None) -> None:
    """Raise one clear error when selected official tasks cannot read their data.

    Raises:
        DataUnavailableError: naming the tasks, `captrack data build/mirror`, CAPTRACK_DATA_DIR and
            the probe suite that needs no data.
    """
    from captrack.official.availability import missing_data_message

    missing = missing_data(manager, names, metadata)
    if missing:
        raise DataUnavailableError(missing_data_message(missing))
