"""Per-option loglikelihoods of paired multiple-choice items, read from the store as arrays.

Ingest types each multiple-choice item's option-index gold and per-option loglikelihoods
(``samples.gold``, ``samples.choice_ll``; captrack.results.ingest_sql), so the distribution
diagnostics read numbers from the store. Stores ingested before those columns existed fall back to
the samples files they recorded (captrack.results.samples.read_paired_choices).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from numpy.typing import NDArray

from captrack.results.pairing import PairedItems
from captrack.results.samples import read_paired_choices, unavailable_reason
from captrack.results.store import Store

__all__ = ["TaskChoices", "loglikelihoods_from_resps", "paired_task_choices"]


@dataclass(frozen=True)
class TaskChoices:
    """One task's paired multiple-choice items (the first replicate, the task's first metric), in base doc order.

    ``base_ll`` / ``variant_ll`` are (n, k_max) loglikelihoods, NaN-padded past each item's ``k``;
    ``skipped`` counts the items left out: no option-index gold, gold out of range, different option
    counts on the two sides, or an option loglikelihood that is no number.
    """

    task: str
    doc_hash: NDArray[np.object_]
    gold: NDArray[np.int64]
    k: NDArray[np.int64]
    base_ll: NDArray[np.float64]
    variant_ll: NDArray[np.float64]
    skipped: int


_QUERY = """
WITH k AS (SELECT * FROM _pc_keys),
runs AS (SELECT DISTINCT task, "filter", metric, base_run, variant_run FROM k),
b AS (SELECT s.task, s."filter", s.metric, s.doc_id, s.gold, s.choice_ll FROM samples s
      JOIN runs r ON s.run_id = r.base_run AND s.task = r.task AND s."filter" = r."filter" AND s.metric = r.metric),
v AS (SELECT s.task, s."filter", s.metric, s.doc_hash, s.choice_ll,
             row_number() OVER (PARTITION BY s.task, s."filter", s.metric, s.doc_hash ORDER BY s.doc_id) AS occ
      FROM samples s
      JOIN runs r ON s.run_id = r.variant_run AND s.task = r.task AND s."filter" = r."filter" AND s.metric = r.metric)
SELECT k.task, k.doc_hash, b.gold, b.choice_ll AS base_ll, v.choice_ll AS variant_ll
FROM k JOIN b ON b.task = k.task AND b."filter" = k."filter" AND b.metric = k.metric AND b.doc_id = k.doc_id
JOIN v ON v.task = k.task AND v."filter" = k."filter" AND v.metric = k.metric AND v.doc_hash = k.doc_hash AND v.occ = k.occ
ORDER BY k.task, k.doc_id
"""


def _first_items(store: Store, paired: PairedItems) -> pd.DataFrame:
    """The paired rows the diagnostics read: first replicate, each multiple-choice task's first metric."""
    items = paired.items
    replicate = items["replicate"].to_numpy() == min(paired.replicates)
    first = items if replicate.all() else items[replicate]  # (a copy only when something is left out)
    kinds = {task: f.output_type == "multiple_choice" for (_, task), f in store.samples_files(paired.base).items()}
    choice_tasks = sorted(task for task, choice in kinds.items() if choice)
    keep = (first["metric"] == first.groupby("task")["metric"].transform("min")).to_numpy(dtype=bool) & first[
        "task"].isin(choice_tasks).to_numpy(dtype=bool)  # (isin, not a map: one pass in Arrow, no Python per row)
    return first if keep.all() else first[keep]


def paired_task_choices(store: Store, paired: PairedItems, warnings: list[str]) -> list[TaskChoices]:
    """Per multiple-choice task (sorted by name), the paired items' gold and per-option loglikelihoods.

    A task ingested before loglikelihoods were stored is read from its samples files; one whose files
    are gone or changed since ingest is left out, with a warning.
    """
    if paired.items.empty or not paired.replicates:
        return []
    items = _first_items(store, paired)
    if items.empty:
        return []
    has_columns = store.con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'samples' AND column_name = 'choice_ll'").fetchall()
    out = []
    for chunk in _task_chunks(items):  # a few tasks per query: what DuckDB and Arrow hold at once stays bounded
        table = _query(store, chunk) if has_columns[0][0] else None
        spans = _task_spans(table) if table is not None else {}
        for task, frame in chunk.groupby("task", sort=True):
            start, size = spans.get(str(task), (0, 0))
            if size and table is not None and all(
                    table.column(side).slice(start, 1).null_count == 0 for side in ("base_ll", "variant_ll")):
                out.append(_from_arrow(str(task), table.slice(start, size)))
            else:  # ingested before the loglikelihoods were typed: read them from the samples files
                found = _from_files(store, paired, str(task), frame, warnings)
                if found is not None:
                    out.append(found)
    return out


def _task_spans(table: pa.Table) -> dict[str, tuple[int, int]]:
    """Each task's first row and row count in `table` (ordered by task: each task's rows are one run), found in one
    pass, not one comparison of every row per task."""
    tasks = table.column("task").to_numpy(zero_copy_only=False)
    if not len(tasks):
        return {}
    starts = np.flatnonzero(np.r_[True, tasks[1:] != tasks[:-1]])
    ends = np.r_[starts[1:], len(tasks)]
    return {str(tasks[a]): (int(a), int(b - a)) for a, b in zip(starts.tolist(), ends.tolist(), strict=True)}


_CHUNK_ROWS = 1 << 19
"""Paired items read per query (whole tasks; a larger task is one query of its own)."""


def _task_chunks(items: pd.DataFrame) -> list[pd.DataFrame]:
    """`items` cut into runs of whole tasks (sorted by name) of about _CHUNK_ROWS rows."""
    sizes = items.groupby("task", sort=True).size()
    chunks: list[list[str]] = [[]]
    rows = 0
    for task, size in sizes.items():
        if chunks[-1] and rows + int(size) > _CHUNK_ROWS:
            chunks.append([])
            rows = 0
        chunks[-1].append(str(task))
        rows += int(size)
    if len(chunks) == 1:
        return [items]
    return [items[items["task"].isin(names)] for names in chunks]


def _query(store: Store, items: pd.DataFrame) -> pa.Table:
    keys = items[["task", "filter", "metric", "doc_hash", "occ", "doc_id", "base_run", "variant_run"]]
    store.con.register("_pc_keys", keys)
    try:
        return store.con.sql(_QUERY).to_arrow_table()
    finally:
        store.con.unregister("_pc_keys")


def _matrix(column: pa.ChunkedArray, n: int) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.bool_]]:
    """A list<double> column as an (n, k_max) NaN-padded matrix, each row's length, and rows with a null entry."""
    array = column.combine_chunks()
    offsets = array.offsets.to_numpy()
    lengths = np.diff(offsets).astype(np.int64)
    values = array.values
    flat = values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)
    null_entry = np.zeros(n, dtype=bool)
    if values.null_count:
        bad = np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))
        null_entry[np.searchsorted(offsets, bad, side="right") - 1] = True
    width = int(lengths.max()) if n else 0
    if n and (lengths == width).all():
        start = int(offsets[0])
        return flat[start:start + n * width].reshape(n, width), lengths, null_entry | array.is_null().to_numpy(zero_copy_only=False)
    matrix = np.full((n, width), np.nan)
    rows = np.repeat(np.arange(n), lengths)
    cols = np.arange(int(lengths.sum())) - np.repeat(offsets[:-1] - offsets[0], lengths)
    matrix[rows, cols] = flat[int(offsets[0]):int(offsets[-1])]
    return matrix, lengths, null_entry | array.is_null().to_numpy(zero_copy_only=False)


def _from_arrow(task: str, table: pa.Table) -> TaskChoices:
    n = table.num_rows
    base, k_base, bad_base = _matrix(table.column("base_ll"), n)
    variant, k_variant, bad_variant = _matrix(table.column("variant_ll"), n)
    gold_column = table.column("gold")
    gold = gold_column.fill_null(-1).to_numpy().astype(np.int64)
    keep = (gold >= 0) & (gold < k_base) & (k_base == k_variant) & ~bad_base & ~bad_variant & (k_base > 0)
    width = int(k_base[keep].max()) if keep.any() else 0
    doc_hash = table.column("doc_hash").to_numpy(zero_copy_only=False)
    return TaskChoices(task, doc_hash[keep], gold[keep], k_base[keep], base[keep, :width], variant[keep, :width],
                       int(n - keep.sum()))


def _from_files(store: Store, paired: PairedItems, task: str, items: pd.DataFrame, warnings: list[str]) -> TaskChoices | None:
    """The old path: gold and loglikelihoods parsed from the two samples files (stores ingested before)."""
    ids = items.iloc[0]
    base_file = store.samples_files(paired.base).get((str(ids["base_run"]), task))
    variant_file = store.samples_files(paired.variant).get((str(ids["variant_run"]), task))
    if base_file is None or variant_file is None:
        return None
    problem = unavailable_reason(base_file) or unavailable_reason(variant_file)
    if problem:
        warnings.append(f"{paired.variant}: {problem}; no distribution diagnostics for {task}")
        return None
    rows: list[tuple[str, int, list[float], list[float]]] = []
    skipped = 0
    for doc_hash, target, base_resps, variant_resps in read_paired_choices(base_file, variant_file,
                                                                          items[["filter", "doc_hash", "occ"]]):
        gold: Any = json.loads(target) if isinstance(target, str) else target
        base_ll, variant_ll = loglikelihoods_from_resps(json.loads(base_resps)), loglikelihoods_from_resps(json.loads(variant_resps))
        if isinstance(gold, str) and gold.strip().isdigit():
            gold = int(gold)
        if not isinstance(gold, int) or not 0 <= gold < len(base_ll) or len(base_ll) != len(variant_ll):
            skipped += 1
            continue
        rows.append((doc_hash, int(gold), base_ll, variant_ll))
    k = np.array([len(r[2]) for r in rows], dtype=np.int64)
    width = int(k.max()) if k.size else 0
    pad = [np.full((len(rows), width), np.nan), np.full((len(rows), width), np.nan)]
    for i, row in enumerate(rows):
        pad[0][i, : k[i]], pad[1][i, : k[i]] = row[2], row[3]
    return TaskChoices(task, np.array([r[0] for r in rows], dtype=object), np.array([r[1] for r in rows], dtype=np.int64),
                       k, pad[0], pad[1], skipped)


def loglikelihoods_from_resps(resps: Any) -> list[float]:
    """Per-option loglikelihoods from a ``filtered_resps`` list of ``[loglik, is_greedy]`` pairs.

    Raises:
        ValueError: an entry whose first element is no number.
    """
    out = []
    for i, pair in enumerate(resps):
        try:
            out.append(float(pair[0] if isinstance(pair, (list, tuple)) else pair))
        except (TypeError, ValueError, IndexError) as exc:
            raise ValueError(f"filtered_resps[{i}] = {pair!r} is not a [loglikelihood, is_greedy] pair") from exc
    return out
