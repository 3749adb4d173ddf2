"""Item-level algorithm contrasts beside mean |drift|: chance-adjusted forgetting F_adj and option
distribution movement 1 − BC, each as a − b with a paired bootstrap CI over items.

Per algorithm a measure is the mean over its variants of the mean over tasks that every variant of
both algorithms has: F_adj per (task, metric) of binary items (max(F − E, 0) with E the chance flips
of a k-option task, 0 without k; with replicates the items are replicate means in [0, 1] and
base·(1 − variant) is an item's expected forgetting) and, per multiple-choice task, the mean over items of 1 − BC (the
Bhattacharyya overlap of the base's and variant's option distributions, captrack.analysis.distribution).
Each task is resampled with captrack.analysis.bootstrap.resample_counts, the same index for every
variant, so a − b is resampled item by item jointly; the CI is the percentile interval. A large task's
weights are made and multiplied a block of resamples at a time (captrack.analysis.bootstrap.resample_matrix).
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.bootstrap import Items, ResampleMatrix, products, resample_matrix
from captrack.analysis.stats import percentile_ci

__all__ = ["MEASURE_COLUMNS", "item_contrasts"]

MEASURES = ("f_adj", "one_minus_bc")
MEASURE_COLUMNS = [f"{m}_{s}" for m in MEASURES for s in ("a", "b", "difference", "ci_low", "ci_high")]
Series = dict[tuple[str, str], tuple[float, NDArray[np.float64]]]  # (variant, unit) -> (point, resamples)


def _weights(counts: NDArray[np.generic], rows: slice) -> NDArray[np.float64]:
    """Rows `rows` of the sample's (a row of ones, row 0) and each resample's item weights, as fractions of the
    items."""
    start, stop, _ = rows.indices(counts.shape[0] + 1)
    weights = np.empty((stop - start, counts.shape[1]), dtype=np.float64)
    first = int(start == 0)
    weights[:first] = 1.0
    weights[first:] = counts[start + first - 1:stop - 1]
    weights /= counts.shape[1]
    return weights


def _as_float64(counts: NDArray[np.generic], rows: slice) -> NDArray[np.float64]:
    """Rows `rows` of the resample counts as float64."""
    return counts[rows].astype(np.float64)


class _BaseMeans:
    """The last base's weighted means: the variants of a task usually pair the same base items, so theirs are reused.
    The weights are referred to weakly, so that the last task's are let go when the next task's are made."""

    def __init__(self) -> None:
        self.base: NDArray[np.float64] | None = None
        self.weights: weakref.ref[ResampleMatrix] | None = None
        self.means: NDArray[np.float64] = np.empty(0)

    def get(self, base: NDArray[np.float64], weights: ResampleMatrix) -> NDArray[np.float64]:
        held = self.weights() if self.weights is not None else None
        if held is not weights or self.base is None or not np.array_equal(self.base, base):
            self.base, self.weights, self.means = base, weakref.ref(weights), weights @ base
        return self.means


def _f_adj(base: NDArray[np.float64], post: NDArray[np.float64], k: float, weights: ResampleMatrix,
           base_means: _BaseMeans | None = None) -> tuple[float, NDArray[np.float64]]:
    """F_adj of paired binary items and its resamples (rows of `weights` after the first: see _weights)."""
    pre = (base_means or _BaseMeans()).get(base, weights)
    forgot, after = products(weights, base * (1 - post), post)
    chance = (1 - pre) * (1 - after) / (k - 1) if not math.isnan(k) and k >= 2 else 0.0
    values = np.maximum(forgot - chance, 0.0)
    return float(values[0]), values[1:]


class _PerTask:
    """The last task's resample matrix (`make(counts, rows)`, with `extra_rows` rows besides the resamples), so the
    variants and metrics of a task (visited together) share it; a large task's is made a block at a time."""

    def __init__(self, n_resamples: int, seed: int, extra_rows: int,
                 make: Callable[[NDArray[np.generic], slice], NDArray[np.float64]]) -> None:
        self.n_resamples, self.seed, self.n_rows, self.make = n_resamples, seed, n_resamples + extra_rows, make
        self.key: tuple[str, int] | None = None
        self.value: ResampleMatrix = np.empty((0, 0))

    def get(self, task: str, n: int) -> ResampleMatrix:
        if self.key != (task, n):
            self.key, self.value = None, np.empty((0, 0))  # the last task's is let go before the next is made
            self.value = resample_matrix(task, n, self.n_resamples, self.seed, self.n_rows, np.float64, self.make)
            self.key = (task, n)
        return self.value


def _forgetting_series(items: Items, transitions: pd.DataFrame, n_resamples: int, seed: int) -> Series:
    out: Series = {}
    scored = transitions[transitions["forgetting_adj"].notna()]
    weights, base_means = _PerTask(n_resamples, seed, 1, _weights), _BaseMeans()
    for row in scored.sort_values("task", kind="stable").itertuples():
        base, post = items.get((str(row.variant), str(row.task), str(row.metric)), (np.empty(0), np.empty(0)))
        if base.size == 0 or not (((base >= 0) & (base <= 1)).all() and ((post >= 0) & (post <= 1)).all()):
            continue
        k = math.nan if row.k is None or pd.isna(row.k) else float(row.k)
        out[(str(row.variant), f"{row.task}/{row.metric}")] = _f_adj(base, post, k, weights.get(str(row.task), base.size),
                                                                           base_means)
    return out


def _bc_series(one_minus_bc: Mapping[tuple[str, str], NDArray[np.float64]], n_resamples: int, seed: int) -> Series:
    """(variant, task) -> mean 1 − BC and its bootstrap means (each task's items resampled alike for every variant)."""
    out: Series = {}
    counts = _PerTask(n_resamples, seed, 0, _as_float64)
    for variant, task in sorted(one_minus_bc, key=lambda key: (str(key[1]), str(key[0]))):
        values = one_minus_bc[(variant, task)]
        out[(str(variant), str(task))] = (float(values.mean()), counts.get(str(task), values.size) @ values / values.size)
    return out


def _algorithm_value(series: Series, variants: list[str], units: list[str]) -> tuple[float, NDArray[np.float64]]:
    point = float(np.mean([np.mean([series[(v, u)][0] for u in units]) for v in variants]))
    samples = np.mean([np.mean(np.vstack([series[(v, u)][1] for u in units]), axis=0) for v in variants], axis=0)
    return point, samples


def _pair(series: Series, by_algorithm: dict[str, list[str]], a: str, b: str, level: float) -> list[float]:
    """[a, b, a − b, ci_low, ci_high] over the units every variant of a and b has (NaN without any)."""
    variants = by_algorithm[a] + by_algorithm[b]
    units_of: dict[str, set[str]] = {}  # each variant's units, from one pass over the series (not one per variant)
    for variant, unit in series:
        units_of.setdefault(variant, set()).add(unit)
    units = sorted(set.intersection(*(units_of.get(name, set()) for name in variants)))
    if not units:
        return [math.nan] * 5
    (value_a, samples_a), (value_b, samples_b) = (_algorithm_value(series, by_algorithm[x], units) for x in (a, b))
    low, high = percentile_ci(samples_a - samples_b, level) if samples_a.size else (math.nan, math.nan)
    return [value_a, value_b, value_a - value_b, low, high]


def item_contrasts(contrasts: pd.DataFrame, algorithms: dict[str, str], items: Items, transitions: pd.DataFrame,
                   one_minus_bc: Mapping[tuple[str, str], NDArray[np.float64]], n_resamples: int, seed: int,
                   level: float = 0.95) -> pd.DataFrame:
    """`contrasts` (one row per algorithm pair) with F_adj and 1 − BC of a and b, a − b and its CI appended.

    Args:
        algorithms: variant name -> algorithm label.
        one_minus_bc: (variant, task) -> 1 − BC per multiple-choice item, in doc_hash order
            (captrack.analysis.item_spool.DistributionItems).
    """
    by_algorithm: dict[str, list[str]] = {}
    for variant, algorithm in sorted(algorithms.items()):
        if algorithm:
            by_algorithm.setdefault(algorithm, []).append(variant)
    builders: dict[str, Callable[[], Series]] = {
        "f_adj": lambda: _forgetting_series(items, transitions, n_resamples, seed),
        "one_minus_bc": lambda: _bc_series(one_minus_bc, n_resamples, seed),
    }
    out = contrasts.copy()
    for measure, build in builders.items():
        series = build() if len(contrasts) else {}
        values = [_pair(series, by_algorithm, str(r.algorithm_a), str(r.algorithm_b), level)
                  if series and {r.algorithm_a, r.algorithm_b} <= set(by_algorithm) else [math.nan] * 5
                  for r in contrasts.itertuples()]
        for i, suffix in enumerate(("a", "b", "difference", "ci_low", "ci_high")):
            out[f"{measure}_{suffix}"] = [v[i] for v in values]
    return out.reindex(columns=[*contrasts.columns, *MEASURE_COLUMNS])

