"""An algorithm's mean drift over its variants, and the interval of what it estimates: the drift another variant of
the same algorithm (another seed or checkpoint, from the same base) would show on the tasks' item population.

A variant's observed drift is d_j = μ + u_j + e_j: the algorithm's mean μ, the variant's own departure u_j
(seed to seed, variance τ²) and its item-sampling error e_j. The e_j of a board's variants are not independent:
every variant is paired with the same base run on the same items, so the base's sampling error (and any item that
all variants of an algorithm lose) moves all of them together (covariance c). Then, with k variants,

    Var(d̄) = (τ² + σ² − c)/k + c,    E[s²] = τ² + σ² − c,

so V = s²/k + ĉ is unbiased for it (s²: the variants' sample variance; σ²: their mean own variance). ĉ is the
mean covariance between two variants' drifts over a joint item bootstrap: the drift's resamples
(captrack.analysis.bootstrap.bootstrap_drift) draw each task's items with one index for the base and every variant
(resample_counts depends only on the task, its items and the seed), so the base's error is shared by them as it is
in the data. The between-variant term s²/k is the two-level variance of Miller (2024, "Adding error bars to evals",
arXiv:2411.00640) for replicates of a model; ĉ is the term it misses when all replicates share one base. Each term
keeps its own quantile:

    d̄ ± √(t(k − 1)² · s²/k + z² · ĉ),

t(k − 1) for the spread estimated from k variants, the normal quantile for the shared term (from the items, not the
variants). Where the shared error comes from few items (the same handful lost by every variant) its estimate
shrinks with the drift it measures, and Satterthwaite's single t over V covered 91.8–93.0% at 5 variants; the
per-term quantiles cover ≥ 94% there at widths 10% (5 variants) to 33% (3) above it.

No interval is drawn from fewer than MIN_VARIANTS variants: with two, s² has one degree of freedom and the interval
would be ± 12.7 standard errors (t(1)), and with one there is no spread between variants at all, so a single
checkpoint's own CI says nothing about another seed of its algorithm. `tests/benchmarks/bench_calibration.py`
(section `algorithms`) measures the coverage at 2, 3 and 5 variants with a shared base.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.drift import _nanmean_rows
from captrack.analysis.intervals import t_quantile, z_quantile

__all__ = ["MIN_VARIANTS", "AlgorithmInterval", "algorithm_interval", "capability_samples", "shared_covariance"]

MIN_VARIANTS = 3
"""The fewest variants an algorithm's interval is drawn from (module docstring)."""


@dataclass(frozen=True)
class AlgorithmInterval:
    """The interval of an algorithm's mean drift (NaN where none is drawn), the degrees of freedom of its
    between-variant term, the standard errors of its two terms (between variants √(s²/k), shared √ĉ) and `note`: how it was made, or why it was not."""

    low: float
    high: float
    df: float
    between_se: float
    shared_se: float
    note: str


def _none(note: str) -> AlgorithmInterval:
    return AlgorithmInterval(math.nan, math.nan, math.nan, math.nan, math.nan, note)


def shared_covariance(samples: NDArray[np.float64]) -> float:
    """The mean covariance between two different rows of `samples` (variants × joint resamples), over the resamples
    where every row is finite; NaN with fewer than two rows or two such resamples."""
    rows = np.asarray(samples, dtype=np.float64)
    if rows.ndim != 2 or rows.shape[0] < 2:
        return math.nan
    rows = rows[:, np.isfinite(rows).all(axis=0)]
    if rows.shape[1] < 2:
        return math.nan
    k = rows.shape[0]
    each = rows.var(axis=1, ddof=1).sum()
    return float((rows.sum(axis=0).var(ddof=1) - each) / (k * (k - 1)))


def algorithm_interval(values: Sequence[float] | NDArray[np.float64], samples: NDArray[np.float64] | None,
                       level: float = 0.95) -> AlgorithmInterval:
    """The interval of the mean of `values` (one drift per variant) for the algorithm's mean (module docstring).

    Args:
        values: each variant's observed drift (NaN dropped, with their rows of `samples`).
        samples: each variant's joint bootstrap resamples of its drift (variants × resamples, every row drawn with
            the same item index), or None where there are none (no interval then).
        level: two-sided confidence level.
    """
    drifts = np.asarray(values, dtype=np.float64)
    kept = np.isfinite(drifts)
    k = int(kept.sum())
    if k < MIN_VARIANTS:
        what = "a checkpoint, not an algorithm" if k == 1 else "too few to estimate the spread between variants"
        return _none(f"none: {k} variant{'s' if k != 1 else ''} ({what}; an interval needs {MIN_VARIANTS})")
    if samples is None or np.asarray(samples).shape[0] != len(drifts):
        return _none("none: no item resamples to estimate the shared base's error")
    shared = shared_covariance(np.asarray(samples, dtype=np.float64)[kept])
    if math.isnan(shared):
        return _none("none: no item resamples to estimate the shared base's error")
    between = float(drifts[kept].var(ddof=1)) / k
    shared = max(shared, 0.0)
    mean = float(drifts[kept].mean())
    half = math.sqrt(t_quantile(level, k - 1) ** 2 * between + z_quantile(level) ** 2 * shared)
    return AlgorithmInterval(mean - half, mean + half, float(k - 1), math.sqrt(between), math.sqrt(shared),
                             f"t({k - 1}) on {k} variants' spread, normal on the shared base's error")


def capability_samples(drift: pd.DataFrame, boot: Mapping[tuple[str, str, str], NDArray[np.float64]]
                       ) -> dict[tuple[str, str], NDArray[np.float32]]:
    """(variant, capability) -> the capability's bootstrap resamples of its mean relative drift: per resample, the
    mean of its members' (NaN ignored), as captrack.analysis.drift.aggregate_capabilities makes them for its CI.

    `drift` has one row per (variant, task, metric, capability) membership; `boot` the resamples of each (variant,
    task, metric) (bootstrap_drift). Kept as float32: a board holds one row per variant and capability."""
    members: dict[tuple[str, str], list[NDArray[np.float64]]] = defaultdict(list)
    if not boot or drift.empty:
        return {}
    for variant, task, metric, capability in zip(drift["variant"], drift["task"], drift["metric"], drift["capability"],
                                                 strict=True):
        found = boot.get((str(variant), str(task), str(metric)))
        if capability and found is not None:
            members[(str(variant), str(capability))].append(found)
    return {key: _nanmean_rows(stacked).astype(np.float32) for key, stacked in members.items()}
