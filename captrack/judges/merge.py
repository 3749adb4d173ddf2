"""Merging a new judging pass into an existing verdict file: a NaN never replaces a valid verdict.

A re-run whose requests fail (server down, key revoked, budget spent) must not turn a complete
verdict file into NaNs. Row by row, an earlier valid verdict is kept in place of a new NaN when it
answers the same question: same doc, filter and metric, same judge and prompt, and the same judge
input (``input``, the cache key) when both rows carry one. When the new pass has no valid verdict
at all and the file has some, the file is left untouched, whichever judge wrote it (a file never
mixes judges).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.errors import InputError

__all__ = ["Merged", "merge_verdicts", "read_verdicts"]

Row = dict[str, Any]


@dataclass(frozen=True)
class Merged:
    """The rows to write (None: keep the file as it is) and how many earlier verdicts were kept."""

    rows: list[Row] | None
    kept: list[Row]


def _valid(row: Row) -> bool:
    return row.get("value") is not None and not row.get("reason")


def _slot(row: Row) -> tuple[Any, ...]:
    return (row.get("doc_id"), row.get("filter"), row.get("metric"))


def _same_question(old: Row, new: Row) -> bool:
    same = all(old.get(k) == new.get(k) for k in ("judge", "prompt", "doc_hash"))
    return same and (old.get("input") is None or old.get("input") == new.get("input"))


def read_verdicts(path: Path) -> list[Row]:
    """The rows of an existing verdict file (none when it does not exist).

    Raises:
        InputError: a line that is not a JSON object (file and line named).
    """
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}, line {number}: not a verdict line ({exc}); delete the file to judge "
                             "this task from scratch (its cached replies are reused)") from exc
        if not isinstance(row, dict):
            raise InputError(f"{path}, line {number}: not a verdict object; delete the file to judge this task from scratch")
        rows.append(row)
    return rows


def merge_verdicts(path: Path, new: list[Row]) -> Merged:
    """The rows to write at `path`: `new`, with earlier valid verdicts kept where the new pass got a NaN."""
    old = {_slot(row): row for row in read_verdicts(path) if _valid(row)}
    if not old:
        return Merged(new, [])
    if not any(_valid(row) for row in new):
        return Merged(None, list(old.values()))
    rows, kept = [], []
    for row in new:
        earlier = old.get(_slot(row))
        if not _valid(row) and earlier is not None and _same_question(earlier, row):
            rows.append(earlier)
            kept.append(earlier)
        else:
            rows.append(row)
    return Merged(rows, kept)
