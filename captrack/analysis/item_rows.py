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
from numpy.typing import NDArray

__all__ = ["OneRowItems", "key_codes", "one_row_items", "pandas_mean"]


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
    columns = [items[name].to_numpy(dtype=object) for name in ("task", "metric", "doc_hash")] + [items["occ"].to_numpy()]
    later, same = np.zeros(len(items) - 1, dtype=bool), np.ones(len(items) - 1, dtype=bool)
    try:  # each row's key after the one before it (compared column by column, as tuples compare)
        for values in columns:
            later |= same & (values[1:] > values[:-1])
            same &= values[1:] == values[:-1]
    except TypeError:  # a missing key (None or NaN): pandas leaves such rows out of its groups
        return None
    if not later.all():
        return None
    task, metric = columns[0], columns[1]
    starts = [0, *(np.flatnonzero((task[1:] != task[:-1]) | (metric[1:] != metric[:-1])) + 1).tolist(), len(items)]
    return OneRowItems({(str(task[start]), str(metric[start])): slice(start, end)
                        for start, end in pairwise(starts)})


def pandas_mean(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """What pandas' group-by mean gives for groups of one value each: the value added to a sum that starts at 0.0
    (so -0.0 becomes 0.0, as there)."""
    return np.asarray(values, dtype=float) + 0.0


def key_codes(items: pd.DataFrame) -> tuple[NDArray[np.intp], list[tuple[str, str]]]:
    """Each row's (task, metric) as a code, and the keys coded, in the order they first appear: what
    ``pd.factorize`` of a (task, metric) MultiIndex gives, from a dict (no MultiIndex built per variant)."""
    found: dict[tuple[str, str], int] = {}
    pairs = zip(*([str(v) for v in items[name].to_numpy(dtype=object).tolist()] for name in ("task", "metric")), strict=True)
    codes = np.fromiter((found.setdefault(key, len(found)) for key in pairs), dtype=np.intp, count=len(items))
    return codes, list(found)
