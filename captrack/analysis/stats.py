"""Statistics: exact McNemar test, Benjamini–Hochberg q-values, paired bootstrap resamples."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.stats import binom

__all__ = ["bh_qvalues", "bootstrap_indices", "mcnemar_exact", "percentile_ci", "sign_flip_pvalue"]


@lru_cache(maxsize=1 << 16)  # a pure function of two counts, asked for again and again across variants and tasks
def mcnemar_exact(n10: int, n01: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test of n10 against n10 + n01 at p = 1/2.

    Returns 1.0 when there are no discordant items.
    """
    n = n10 + n01
    if n == 0:
        return 1.0
    return float(min(1.0, 2.0 * binom.cdf(min(n10, n01), n, 0.5)))


def sign_flip_pvalue(changes: NDArray[np.int64]) -> float:
    """Two-sided exact p-value of the paired sign-flip (permutation) test of no change, one integer per item.

    Each item's change (e.g. its variant − base correct answers summed over seeds) keeps its size and takes either
    sign with probability 1/2 under the null; p = P(|Σ| ≥ |observed Σ|). Items, not item × seed pairs, are the
    independent units. With changes in {−1, 0, 1} (one seed) it is mcnemar_exact. 1.0 when nothing changed.
    """
    values = np.asarray(changes, dtype=np.int64)
    sizes = np.abs(values[values != 0])
    if not sizes.size:
        return 1.0
    # U = Σ over items of size·[sign +]: Σ = 2U − Σ sizes; each size's count of + signs is binomial(count, 1/2)
    dist, offset = np.ones(1), 0
    for size, count in zip(*np.unique(sizes, return_counts=True), strict=True):
        plus = np.arange(count + 1)
        pmf = binom.pmf(plus, count, 0.5)
        kept = np.flatnonzero(pmf > 0)  # the far tails underflow: nothing to add there
        spread = np.zeros((kept[-1] - kept[0]) * int(size) + 1)
        spread[::int(size)] = pmf[kept[0]:kept[-1] + 1]
        dist, offset = np.convolve(dist, spread), offset + int(kept[0]) * int(size)
    at_least = math.ceil((int(sizes.sum()) + abs(int(values.sum()))) / 2) - offset  # U ≥ this: Σ ≥ |observed|
    return float(min(1.0, 2.0 * dist[max(at_least, 0):].sum()))


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
