"""``captrack import --format lighteval``: lighteval's per-sample details (the files post-forget reads).

lighteval's ``EvaluationTracker`` (``--save-details``) writes ``details/<model>/<date>/details_<task>_<date>.parquet``,
one row per document: ``doc`` (``query``, ``choices``, ``gold_index``, ``id``, ``task_name``, ...),
``model_response`` (``text``, ...) and ``metric`` (metric name -> value). SRC is such a ``<date>`` folder,
or one details file.

Items are identified by ``doc.id`` (the row's position where lighteval left the ids empty); one replicate.
The task is the file's task name without its few-shot suffix (``leaderboard|arc:challenge|25`` ->
``leaderboard|arc:challenge``). The outcome is the task's first metric in the file (``--outcome NAME``
picks another, e.g. ``acc_norm``); a missing or null value is unscored. With ``--rescore`` the first
response text is scored again by the captrack task named by ``--task`` (``doc.id`` its document ids).
"""

from __future__ import annotations

import hashlib
import io
import re
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.errors import InputError
from captrack.imports.formats import ReadOptions, Source, adapter
from captrack.imports.reading import read_bytes
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_lighteval"]

_FILE = re.compile(r"details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.parquet")


def _rows(path: Path) -> tuple[list[dict[str, Any]], str]:
    """The parquet file's rows and its SHA-256.

    Raises:
        InputError: not a readable Parquet file (truncated, damaged) or without lighteval's columns.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = read_bytes(path)
    try:
        rows = pq.read_table(io.BytesIO(source.data)).to_pylist()
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]}); the file is truncated or damaged") from exc
    if rows and not {"doc", "metric"} <= set(rows[0]):
        raise InputError(f"{path}: no 'doc' and 'metric' columns (has {', '.join(rows[0])}); not a lighteval details file")
    return rows, source.sha256


def _task(path: Path) -> str:
    match = _FILE.fullmatch(path.name)
    if match is None:
        raise InputError(f"{path}: not named details_<task>_<date>.parquet (lighteval's details file)")
    task = match["task"]
    parts = task.split("|")
    return "|".join(parts[:-1]) if len(parts) > 1 and parts[-1].isdigit() else task


def _first_text(value: Any) -> str:
    if isinstance(value, list):
        return str(value[0]) if value else ""
    return "" if value is None else str(value)


def _gold(doc: dict[str, Any]) -> str:
    gold, choices = doc.get("gold_index"), doc.get("choices") or []
    golds = gold if isinstance(gold, list) else [gold]
    texts = [str(choices[g]) for g in golds if isinstance(g, int) and 0 <= g < len(choices)]
    return " | ".join(texts)


def _read_file(path: Path, options: ReadOptions) -> tuple[list[Outcome], str, str]:
    rows, sha = _rows(path)
    task = _task(path)
    names = [str(k) for k in (rows[0]["metric"] or {})] if rows else []
    metric = options.outcome or (names[0] if names else "")
    if metric not in names:
        raise InputError(f"{path}: no metric {metric!r} (the file has {', '.join(names) or 'none'}); pick one with --outcome")
    ids = [str((row.get("doc") or {}).get("id") or "") for row in rows]
    use_ids = all(ids)
    outcomes = []
    for i, row in enumerate(rows):
        where = f"{path} row {i}"
        doc, response = row.get("doc") or {}, row.get("model_response") or {}
        value = outcome_value(f"{where}: metric.{metric}", (row.get("metric") or {}).get(metric))
        outcomes.append(Outcome(task, ids[i] if use_ids else f"#{i}", 0, value, i, _first_text(response.get("text")),
                                str(doc.get("query") or ""), _gold(doc),
                                {"choices": [str(c) for c in doc.get("choices") or []]}))
    return outcomes, metric, sha


@adapter("lighteval")
def read_lighteval(src: Path, task: str | None, options: ReadOptions) -> Source:
    """lighteval's details parquet files: ``doc.id`` the item, the first metric the outcome."""
    files = sorted(src.glob("details_*.parquet")) if src.is_dir() else [src]
    if not files:
        raise InputError(f"{src}: no details_<task>_<date>.parquet files; point at lighteval's details/<model>/<date>/ folder")
    outcomes: list[Outcome] = []
    metrics: set[str] = set()
    seen: dict[str, str] = {}
    digest = hashlib.sha256()
    for path in files:
        rows, metric, sha = _read_file(path, options)
        name = _task(path)
        if name in seen:
            raise InputError(f"{src}: task {name} has two details files ({seen[name]} and {path.name}); keep one")
        seen[name] = path.name
        digest.update(f"{path.name}\t{sha}\n".encode())
        outcomes += rows
        metrics.add(metric)
    model = src.parent.name if src.is_dir() else src.parent.parent.name
    records = [ReplayRecord(task=task or o.task, response=o.response, id=o.item) for o in outcomes
               if not o.item.startswith("#")]
    note = f"lighteval's own metric {', '.join(sorted(metrics))} per document, as its details report it"
    return Source(records, model or src.name, digest.hexdigest(), outcomes, note)
