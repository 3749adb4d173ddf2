"""Before any model work, check that every selected official task can read its data here."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from captrack.errors import CaptrackError, DataUnavailableError, InputError, close_matches

__all__ = ["check_task_data", "missing_data", "resolve_model_aliases", "unknown_tasks_error"]


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
    from captrack.official.availability import mirror_in_use, missing_data_message

    missing = missing_data(manager, names, metadata)
    if missing:
        raise DataUnavailableError(missing_data_message(missing, mirror_in_use(metadata)))


def resolve_model_aliases(model_args: Any) -> Any:
    """lm-eval's parsed ``model_args`` with a captrack alias in ``pretrained``/``tokenizer`` replaced by its local folder.

    So ``lm_eval --model hf --model_args pretrained=smollm2-135m-instruct`` reads the model converted
    once from its pip package into captrack's cache, instead of asking the hub for a repository of
    that name. Anything that is not a known alias (a path, a hub id) is left as it is.
    """
    from pathlib import Path

    from captrack.models import KNOWN_ALIASES, resolve_model

    if not isinstance(model_args, dict):
        return model_args
    out = dict(model_args)
    for key in ("pretrained", "tokenizer"):
        value = out.get(key)
        if isinstance(value, str) and value.strip().lower() in KNOWN_ALIASES and not Path(value).exists():
            out[key] = str(resolve_model(value))
    return out


def unknown_tasks_error(message: str, include_path: Any, metadata: Mapping[str, Any] | None) -> CaptrackError:
    """lm-eval's ``ValueError("Tasks not found: a, b")`` as one line with close names and where to list tasks."""
    names = [n.strip() for n in message.partition(":")[2].split(",") if n.strip()]
    if names == ["list"]:
        return InputError("`--tasks list` is gone from lm-eval 0.4.13: list tasks with `lm_eval ls tasks` "
                          "(captrack's own, with their data status: `captrack tasks`)")
    from lm_eval.tasks import TaskManager

    known = TaskManager(include_path=include_path, metadata=dict(metadata or {})).all_subtasks
    parts = []
    for name in names:
        hints = close_matches(name, known)
        parts.append(f"{name!r}" + (f" (did you mean {', '.join(repr(h) for h in hints)}?)" if hints else ""))
    return InputError(f"unknown task(s) {', '.join(parts)}; list them with `lm_eval ls tasks` or `captrack tasks`")
