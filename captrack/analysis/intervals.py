"""Confidence intervals and p-values of a paired change, each from one test so the two never disagree.

- Binary metrics: Tango's (1998) asymptotic score interval for the difference of two paired proportions,
  recommended by Fagerland, Lydersen & Laake (2014), with a continuity correction of 1/8 of an item on the
  score's numerator. The correction is the smallest of {0, 1/8, 1/4, 1/2} with which the exact scan of
  `tests/benchmarks/bench_calibration.py` keeps every cell's 95% coverage ≥ 94%, each side's null size
  ≤ 2.5% and the size of the equivalence test ≤ 5% (plain Tango: 93.0%, 2.67% and 5.48%).
  The p-value inverts the same score test at a change of 0: at 0 Tango's statistic is McNemar's
  (g − l)/√(g + l), so the interval excludes 0 exactly where p < 0.05 (two-sided).
- Clustered items: a cluster-robust (CR1: G/(G − 1)) variance with t(G − 1) quantiles (Cameron & Miller
  2015), never narrower than the interval without clusters (the hull of both is reported).
- Relative drift of a binary metric (100·(variant − base)/base): an adjusted log-ratio interval of paired
  proportions, ratio (B + 1)/(A + 1) with var(log) = (n10 + n01 + 2)/((A + 1)(B + 1)) (A, B: the base's and
  the variant's correct items; after Bonett & Price 2006), defined even when the base got no item right.
- Other metrics: a Wald interval with normal quantiles (its variance from captrack.analysis.verdicts).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.stats import norm
from scipy.stats import t as student_t

__all__ = ["CONTINUITY", "ratio_interval", "score_interval", "score_limits", "score_pvalue", "t_quantile", "wald_pvalue", "z_quantile"]

CONTINUITY = 0.125
"""Items taken off |gains − losses − n·δ| in Tango's score (see the module docstring)."""


@lru_cache(maxsize=64)
def z_quantile(level: float) -> float:
    """The normal quantile of a two-sided interval at `level` (1.96 at 0.95)."""
    return float(norm.ppf(0.5 + level / 2.0))


@lru_cache(maxsize=4096)
def t_quantile(level: float, df: float) -> float:
    """The t(df) quantile of a two-sided interval at `level` (inf below 1 degree of freedom)."""
    return float(student_t.ppf(0.5 + level / 2.0, df)) if df >= 1 else math.inf


def _score(gains: NDArray[np.float64], losses: NDArray[np.float64], n: NDArray[np.float64], delta: NDArray[np.float64],
           continuity: float) -> NDArray[np.float64]:
    """Tango's score statistic for H0: change = `delta` (fractions), decreasing in `delta`.

    With g gains (0→1), l losses (1→0) of n items and the constrained maximum-likelihood share of losses
    p̃ (the root of 2n·p² + B·p + C = 0), Z = (g − l − n·δ) / √(n·(2p̃ + δ(1 − δ))).
    """
    b = -gains - losses + (2.0 * n - gains + losses) * delta
    c = -losses * delta * (1.0 - delta)
    p_loss = (-b + np.sqrt(np.maximum(b * b - 8.0 * n * c, 0.0))) / (4.0 * n)
    spread = np.sqrt(np.maximum(n * (2.0 * p_loss + delta * (1.0 - delta)), 0.0))
    excess = gains - losses - n * delta
    excess = np.sign(excess) * np.maximum(np.abs(excess) - continuity, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(np.where(spread > 0, excess / np.where(spread > 0, spread, 1.0),
                                   np.sign(excess) * np.inf), dtype=np.float64)


def score_interval(gains: ArrayLike, losses: ArrayLike, n: ArrayLike, level: float = 0.95,
                   continuity: float = CONTINUITY) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Tango's score interval of the paired change (gains − losses)/n, in fractions; vectorised.

    Args:
        gains, losses: items that went 0→1 (better) and 1→0 (worse), oriented so that + is better.
        n: paired items (n > 0).
        level: two-sided confidence level.

    Returns:
        (low, high) arrays: the changes δ in (−1, 1) whose score test at `level` does not reject.
    """
    g, lo_count, total = (np.asarray(x, dtype=np.float64) for x in np.broadcast_arrays(gains, losses, n))
    z = z_quantile(level)
    point = (g - lo_count) / total
    low_out, low_in = np.full(point.shape, -1.0), point.copy()  # the statistic is ≥ z at low_out, < z at low_in
    high_in, high_out = point.copy(), np.full(point.shape, 1.0)
    for _ in range(56):  # bisection to ~1e-17 of the unit interval
        mid = (low_out + low_in) / 2.0
        above = _score(g, lo_count, total, mid, continuity) > z
        low_out, low_in = np.where(above, mid, low_out), np.where(above, low_in, mid)
        mid = (high_in + high_out) / 2.0
        below = _score(g, lo_count, total, mid, continuity) < -z
        high_out, high_in = np.where(below, mid, high_out), np.where(below, high_in, mid)
    return low_in, high_in


def _score_one(gains: float, losses: float, n: float, delta: float, continuity: float) -> float:
    """_score for one table in plain floats (a compare asks for a few thousand; numpy's overhead dominates there)."""
    b = -gains - losses + (2.0 * n - gains + losses) * delta
    c = -losses * delta * (1.0 - delta)
    p_loss = (-b + math.sqrt(max(b * b - 8.0 * n * c, 0.0))) / (4.0 * n)
    spread = math.sqrt(max(n * (2.0 * p_loss + delta * (1.0 - delta)), 0.0))
    excess = gains - losses - n * delta
    excess = math.copysign(max(abs(excess) - continuity, 0.0), excess)
    if spread > 0:
        return excess / spread
    return math.copysign(math.inf, excess) if excess else 0.0


@lru_cache(maxsize=1 << 16)  # a board asks for the same few small tables again and again
def score_limits(gains: int, losses: int, n: int, level: float = 0.95,
                 continuity: float = CONTINUITY) -> tuple[float, float]:
    """score_interval of one table (the same limits, found by Brent's method on plain floats)."""
    z, point = z_quantile(level), (gains - losses) / n
    edge = 1.0 - 1e-12

    def low(delta: float) -> float:
        return _score_one(gains, losses, n, delta, continuity) - z

    def high(delta: float) -> float:
        return _score_one(gains, losses, n, delta, continuity) + z

    lower = -1.0 if low(-edge) <= 0 else float(brentq(low, -edge, point, xtol=1e-14))
    upper = 1.0 if high(edge) >= 0 else float(brentq(high, point, edge, xtol=1e-14))
    return lower, upper


def score_pvalue(gains: ArrayLike, losses: ArrayLike, continuity: float = CONTINUITY) -> NDArray[np.float64]:
    """Two-sided p-value of the score test of no change (the interval's own test at δ = 0); 1 without flips."""
    g, lo_count = (np.asarray(x, dtype=np.float64) for x in np.broadcast_arrays(gains, losses))
    excess = np.maximum(np.abs(g - lo_count) - continuity, 0.0)
    flips = g + lo_count
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(flips > 0, excess / np.sqrt(np.where(flips > 0, flips, 1.0)), 0.0)
    return np.asarray(np.minimum(1.0, 2.0 * norm.sf(z)), dtype=np.float64)


def wald_pvalue(delta: float, se: float, df: float | None = None) -> float:
    """Two-sided p-value of a Wald test of no change (t(df) when df is given); NaN without a spread."""
    if math.isnan(delta) or math.isnan(se) or se <= 0.0:
        return 1.0 if se == 0.0 and delta == 0.0 else math.nan
    z = abs(delta) / se
    return float(min(1.0, 2.0 * (student_t.sf(z, df) if df is not None else norm.sf(z))))


def ratio_interval(base: NDArray[np.float64], variant: NDArray[np.float64], level: float = 0.95) -> tuple[float, float]:
    """CI of the relative drift 100·(variant − base)/base of paired 0/1 outcomes, in percent (module docstring)."""
    before, after = np.asarray(base) > 0.5, np.asarray(variant) > 0.5
    a, b = float(before.sum()), float(after.sum())
    discordant = float((before != after).sum())
    log_ratio = math.log((b + 1.0) / (a + 1.0))
    half = z_quantile(level) * math.sqrt((discordant + 2.0) / ((a + 1.0) * (b + 1.0)))
    return 100.0 * (math.exp(log_ratio - half) - 1.0), 100.0 * (math.exp(log_ratio + half) - 1.0)
