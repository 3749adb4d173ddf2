"""Statistics: exact McNemar test, Benjamini–Hochberg q-values, paired bootstrap resamples."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom

__all__ = ["bh_qvalues", "bootstrap_indices", "mcnemar_exact", "percentile_ci"]


@lru_cache(maxsize=1 << 16)  # a pure function of two counts, asked for again and again across variants and tasks
def mcnemar_exact(n10: int, n01: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of n10 against n10 + n01 at p = 1/2.

    Returns 1.0 when there are no discordant items.
    """
    n = n10 + n01
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(n10, n01), n, 0.5)))


def bh_qvalues(pvalues: NDArray[np.float64]) -> NDArray[np.float64]:
    """Benjamini–Hochberg adjusted p-values (q-values); NaN p-values stay NaN and are not counted."""
    p = np.asarray(pvalues, dtype=float)
    q = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if m == 0:
        return q
    order = valid[np.argsort(p[valid], kind="mergesort")]
    ranked = p[order] * m / np.arange(1, m + 1)
    q[order] = np.minimum(1.0, np.minimum.accumulate(ranked[::-1])[::-1])
    return q


def bootstrap_indices(n_items: int, n_resamples: int, rng: np.random.Generator) -> NDArray[np.int32]:
    """Item indices for `n_resamples` bootstrap resamples of `n_items` paired items (rows)."""
    return rng.integers(0, n_items, size=(n_resamples, n_items), dtype=np.int32)


def percentile_ci(samples: NDArray[np.float64], level: float = 0.95) -> tuple[float, float]:
    """Percentile confidence interval of bootstrap samples, ignoring NaN; (nan, nan) if none."""
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return math.nan, math.nan
    tail = (1.0 - level) / 2.0 * 100.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return float(low), float(high)
