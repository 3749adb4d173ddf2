"""Paired items that are one row each, found without pandas: the common case of a variant evaluated once per seed
with the base's single seed, where grouping rows into items changes nothing.

Item means, item labels and the pairs table group paired rows by (task, metric, doc_hash, occ) with pandas, sorted;
over a leaderboard's hundreds of small variants, those group-bys were a tenth of building it. When every item is
one row and the rows already come in that sorted order (captrack.results.pairing sorts them so), each group is
its row, in place: `one_row_items` says so, and where the (task, metric) runs start and end.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

__all__ = ["OneRowItems", "key_codes", "one_row_items", "pandas_mean"]

_KEYS = ("task", "metric", "doc_hash", "occ")


@dataclass(frozen=True)
class OneRowItems:
    """Rows of paired items, one row per item, sorted as a group-by of (task, metric, doc_hash, occ) sorts them:
    ``runs`` (task, metric) -> the slice of its rows, in that order."""

    runs: dict[tuple[str, str], slice]


def one_row_items(items: pd.DataFrame) -> OneRowItems | None:
    """The (task, metric) runs of `items` when each item is one row and rows are strictly in (task, metric,
    doc_hash, occ) order (Python's string order: the group-by's); None otherwise (the caller groups with pandas)."""
    if items.empty:
        return None
    try:
        columns = [pa.array(items[name], from_pandas=True) for name in _KEYS]
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError):  # text mixed with other values
        return _one_row_items_python(items)
    if any(column.null_count for column in columns):  # a missing key: pandas leaves such rows out of its groups
        return None
    later, same = np.zeros(len(items) - 1, dtype=bool), np.ones(len(items) - 1, dtype=bool)
    for column in columns:  # each row's key after the one before it (compared column by column, as tuples compare)
        before, after = column.slice(0, len(column) - 1), column.slice(1)
        later |= same & pc.greater(after, before).to_numpy(zero_copy_only=False)
        same &= pc.equal(after, before).to_numpy(zero_copy_only=False)
        if later.all():
            break
    if not later.all():
        return None
    task, metric = columns[0], columns[1]
    moved = ~(pc.equal(task.slice(1), task.slice(0, len(task) - 1)).to_numpy(zero_copy_only=False)
              & pc.equal(metric.slice(1), metric.slice(0, len(metric) - 1)).to_numpy(zero_copy_only=False))
    starts = [0, *(np.flatnonzero(moved) + 1).tolist(), len(items)]
    at = pa.array(starts[:-1], pa.int64())
    return _runs(task.take(at).to_pylist(), metric.take(at).to_pylist(), starts)


def _runs(tasks: list[object], metrics: list[object], starts: list[int]) -> OneRowItems:
    return OneRowItems({(str(task), str(metric)): slice(start, end)
                        for task, metric, (start, end) in zip(tasks, metrics, pairwise(starts), strict=True)})


def _one_row_items_python(items: pd.DataFrame) -> OneRowItems | None:
    """`one_row_items` for key columns Arrow cannot type (Python objects compared as Python compares them)."""
    columns = [items[name].to_numpy(dtype=object) for name in _KEYS[:3]] + [items["occ"].to_numpy()]
    later, same = np.zeros(len(items) - 1, dtype=bool), np.ones(len(items) - 1, dtype=bool)
    try:
        for values in columns:
            later |= same & (values[1:] > values[:-1])
            same &= values[1:] == values[:-1]
    except TypeError:  # a missing key (None or NaN)
        return None
    if not later.all():
        return None
    task, metric = columns[0], columns[1]
    starts = [0, *(np.flatnonzero((task[1:] != task[:-1]) | (metric[1:] != metric[:-1])) + 1).tolist(), len(items)]
    return _runs([task[i] for i in starts[:-1]], [metric[i] for i in starts[:-1]], starts)


def pandas_mean(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """What pandas' group-by mean gives for groups of one value each: the value added to a sum that starts at 0.0
    (so -0.0 becomes 0.0, as there)."""
    return np.asarray(values, dtype=float) + 0.0


def key_codes(items: pd.DataFrame) -> tuple[NDArray[np.intp], list[tuple[str, str]]]:
    """Each row's (task, metric) as a code, and the keys coded, in the order they first appear: what
    ``pd.factorize`` of a (task, metric) MultiIndex gives, without building the MultiIndex (each column factorized,
    then the pairs of codes)."""
    task, tasks = pd.factorize(items["task"], sort=False, use_na_sentinel=False)
    metric, metrics = pd.factorize(items["metric"], sort=False, use_na_sentinel=False)
    width = max(len(metrics), 1)
    codes, pairs = pd.factorize(task.astype(np.int64) * width + metric, sort=False)
    keys = [(str(tasks[int(pair) // width]), str(metrics[int(pair) % width])) for pair in pairs.tolist()]
    return codes.astype(np.intp, copy=False), keys
