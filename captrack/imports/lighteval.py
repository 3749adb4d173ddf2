"""``captrack import --format lighteval``: lighteval's per-sample details (the files post-forget reads).

lighteval's ``EvaluationTracker`` (``--save-details``) writes ``details/<model>/<date>/details_<task>_<date>.parquet``,
one row per document: ``doc`` (``query``, ``choices``, ``gold_index``, ``id``, ``task_name``, ...),
``model_response`` (``text``, ...) and ``metric`` (metric name -> value). SRC is such a ``<date>`` folder,
or one details file.

Items are identified by ``doc.id`` (an integer id, 0 included, is an id); one replicate. A file where lighteval
left every id empty is paired by row position, and the note says so; a file with some ids empty is refused, naming
the rows (positions are not the same items in another run).
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
from captrack.imports.reading import read_bytes, text_id
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_lighteval"]

POSITIONS = "paired by row position: the file has no doc.id"
SHOWN = 20  # rows named in the message about missing ids

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


def _ids(path: Path, rows: list[dict[str, Any]]) -> list[str] | None:
    """Each row's ``doc.id`` as text (an integer 0 is an id); None when no row has one (paired by row position).

    Raises:
        InputError: some rows have an id and some not (the rows without one named), or an id is not text or an integer.
    """
    raw = [(row.get("doc") or {}).get("id") for row in rows]
    missing = [i for i, value in enumerate(raw) if value is None or (isinstance(value, str) and not value.strip())]
    if len(missing) == len(rows):
        return None
    if missing:
        shown = ", ".join(map(str, missing[:SHOWN])) + (f" ... and {len(missing) - SHOWN} more" if len(missing) > SHOWN else "")
        raise InputError(f"{path}: {len(missing)} of {len(rows)} rows have no doc.id (rows {shown}, counted from 0); "
                         "captrack pairs lighteval's items by doc.id, and a row's position is not the same item in another "
                         "run: give every row its id (or none, to pair all by position), or drop those rows; nothing was written")
    return [text_id(f"{path} row {i}: doc.id", value) for i, value in enumerate(raw)]


def _read_file(path: Path, options: ReadOptions) -> tuple[list[Outcome], str, str, bool]:
    """The file's outcomes, the metric taken, its SHA-256, and whether its items are keyed by doc.id."""
    rows, sha = _rows(path)
    task = _task(path)
    names = [str(k) for k in (rows[0]["metric"] or {})] if rows else []
    metric = options.outcome or (names[0] if names else "")
    if metric not in names:
        raise InputError(f"{path}: no metric {metric!r} (the file has {', '.join(names) or 'none'}); pick one with --outcome")
    ids = _ids(path, rows)
    outcomes = []
    for i, row in enumerate(rows):
        where = f"{path} row {i}"
        doc, response = row.get("doc") or {}, row.get("model_response") or {}
        value = outcome_value(f"{where}: metric.{metric}", (row.get("metric") or {}).get(metric))
        outcomes.append(Outcome(task, ids[i] if ids is not None else f"#{i}", 0, value, i,
                                _first_text(response.get("text")), str(doc.get("query") or ""), _gold(doc),
                                {"choices": [str(c) for c in doc.get("choices") or []]}))
    return outcomes, metric, sha, ids is not None


@adapter("lighteval")
def read_lighteval(src: Path, task: str | None, options: ReadOptions) -> Source:
    """lighteval's details parquet files: ``doc.id`` the item, the first metric the outcome."""
    files = sorted(src.glob("details_*.parquet")) if src.is_dir() else [src]
    if not files:
        raise InputError(f"{src}: no details_<task>_<date>.parquet files; point at lighteval's details/<model>/<date>/ folder")
    outcomes: list[Outcome] = []
    records: list[ReplayRecord] = []
    positional: list[str] = []
    metrics: set[str] = set()
    seen: dict[str, str] = {}
    digest = hashlib.sha256()
    for path in files:
        rows, metric, sha, keyed = _read_file(path, options)
        name = _task(path)
        if name in seen:
            raise InputError(f"{src}: task {name} has two details files ({seen[name]} and {path.name}); keep one")
        seen[name] = path.name
        digest.update(f"{path.name}\t{sha}\n".encode())
        outcomes += rows
        metrics.add(metric)
        if keyed:
            records += [ReplayRecord(task=task or o.task, response=o.response, id=o.item) for o in rows]
        else:
            positional.append(name)
    model = src.parent.name if src.is_dir() else src.parent.parent.name
    note = f"lighteval's own metric {', '.join(sorted(metrics))} per document, as its details report it"
    if positional:
        note += f" ({', '.join(positional)}: {POSITIONS})"
    origin = f"lighteval's model folder {model!r} (details/<model>/<date>/)" if model else f"the name {src.name!r}"
    return Source(records, model or src.name, digest.hexdigest(), outcomes, note, origin)
