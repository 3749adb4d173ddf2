"""A capability's (or group's) interval: a stratified score test of the mean of its members' changes, inverted.

The capability's change is Δ = (1/m) Σ Δ_i over its m members (margin units: points for 0/1 and [0, 1]
metrics, percent of the base mean for counts). To test H0: Δ = δ, each member is moved by the same amount,
δ_i = Δ̂_i + (δ − Δ̂), and a 0/1 member's variance is Tango's (1998) constrained one at δ_i,
(2p̃_i + δ_i(1 − δ_i))/n_i with p̃_i the constrained maximum-likelihood share of its losses (fractions; see
captrack.analysis.intervals): the variance the hypothesis implies, not the one the few observed flips show.
Other members keep their Wald variance, and members that share items their observed covariances. Then

    Z(δ) = (Δ̂ − δ ∓ c) / √(Σ_i V_i(δ_i) + Σ_{i≠j} C_ij) · m,    c = (1/m) Σ_{0/1 members} 100 · CONTINUITY / n_i,

and the interval is {δ : |Z(δ)| < z}: with one member it is the single task's own score interval. The
summed Agresti–Min Wald variance it replaces sized the equivalence test (TOST) up to 9.4% at 2 × 80 items with
one-way losses (statistics audit 2026-11-29, §1b); `tests/benchmarks/bench_calibration.py` (section
`members`) enumerates the 2–4 members × 50–150 items cells exactly.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.stats import norm

from captrack.analysis.intervals import CONTINUITY, z_quantile

__all__ = ["ScoreMember", "capability_statistic", "combined_pvalue", "combined_score"]

_EDGE = 1.0 - 1e-12  # a 0/1 member's tested change stays inside (−1, 1)


@dataclass(frozen=True)
class ScoreMember:
    """One member of the mean: its observed change (margin units) and, for a 0/1 member, its flip counts
    (gains and losses oriented so that + is better); `variance` is a non-0/1 member's Wald variance."""

    delta: float
    gains: int = 0
    losses: int = 0
    n: int = 0
    variance: float = math.nan

    @property
    def binary(self) -> bool:
        return self.n > 0


def _tango_variance(gains: float, losses: float, n: float, delta: float) -> float:
    """Tango's constrained variance of (gains − losses)/n at a change of `delta` (fractions)."""
    b = -gains - losses + (2.0 * n - gains + losses) * delta
    c = -losses * delta * (1.0 - delta)
    p_loss = (-b + math.sqrt(max(b * b - 8.0 * n * c, 0.0))) / (4.0 * n)
    return max(2.0 * p_loss + delta * (1.0 - delta), 0.0) / n


def _statistic(members: Sequence[ScoreMember], covariance: float, delta: float) -> float:
    """Z(δ) of the module docstring for one capability (plain floats: a board asks for thousands)."""
    m = len(members)
    point = sum(member.delta for member in members) / m
    total, correction = covariance, 0.0
    for member in members:
        if member.binary:
            moved = min(max((member.delta + delta - point) / 100.0, -_EDGE), _EDGE)
            total += 1e4 * _tango_variance(member.gains, member.losses, member.n, moved)
            correction += 100.0 * CONTINUITY / member.n
        else:
            total += member.variance
    excess = point - delta
    excess = math.copysign(max(abs(excess) - correction / m, 0.0), excess)
    spread = math.sqrt(max(total, 0.0)) / m
    if spread > 0:
        return excess / spread
    return math.copysign(math.inf, excess) if excess else 0.0


def _limit(members: Sequence[ScoreMember], covariance: float, point: float, z: float, side: float) -> float:
    """The end of the interval on `side` (−1 low, +1 high): where Z crosses ∓z, the bracket widened as needed."""
    def f(delta: float) -> float:
        return _statistic(members, covariance, delta) + side * z

    step = 1.0
    while f(point + side * step) * side > 0:  # still inside the interval
        step *= 2.0
        if step > 1e9:
            return side * math.inf
    return float(brentq(f, *sorted((point, point + side * step)), xtol=1e-12))


def combined_score(members: Sequence[ScoreMember], covariance: float, level: float) -> tuple[float, float]:
    """The capability's interval at `level` (margin units): the δ whose Z(δ) lies within ±z (module docstring).

    Args:
        members: every member of the mean (at least one).
        covariance: Σ_{i≠j} C_ij, the members' covariances on shared items (margin units², not over m²).
        level: two-sided confidence level.
    """
    point = sum(member.delta for member in members) / len(members)
    z = z_quantile(level)
    return _limit(members, covariance, point, z, -1.0), _limit(members, covariance, point, z, 1.0)


def combined_pvalue(members: Sequence[ScoreMember], covariance: float) -> float:
    """Two-sided p-value of the same test at a change of 0: the 95% interval excludes 0 exactly when p < 0.05."""
    return float(min(1.0, 2.0 * norm.sf(abs(_statistic(members, covariance, 0.0)))))


def capability_statistic(gains: ArrayLike, losses: ArrayLike, n: ArrayLike, delta: float) -> NDArray[np.float64]:
    """Z(δ) of independent 0/1 members, vectorised over tables: arrays of shape (tables, m), δ in points.

    The interval holds δ exactly where −z ≤ Z(δ) ≤ z, so the exact scans of the calibration bench decide each
    verdict from Z at 0, ±margin and the truth without finding a limit.
    """
    g, lo, total = (np.asarray(x, dtype=np.float64) for x in np.broadcast_arrays(gains, losses, n))
    m = g.shape[-1]
    each = 100.0 * (g - lo) / total
    point = each.mean(axis=-1)
    moved = np.clip((each + delta - point[..., None]) / 100.0, -_EDGE, _EDGE)
    b = -g - lo + (2.0 * total - g + lo) * moved
    c = -lo * moved * (1.0 - moved)
    p_loss = (-b + np.sqrt(np.maximum(b * b - 8.0 * total * c, 0.0))) / (4.0 * total)
    var = 1e4 * (np.maximum(2.0 * p_loss + moved * (1.0 - moved), 0.0) / total).sum(axis=-1)
    excess = point - delta
    excess = np.sign(excess) * np.maximum(np.abs(excess) - (100.0 * CONTINUITY / total).sum(axis=-1) / m, 0.0)
    spread = np.sqrt(var) / m
    with np.errstate(divide="ignore", invalid="ignore"):
        bare = np.where(excess == 0, 0.0, np.sign(excess) * np.inf)  # nothing to spread: 0 where nothing moved either
        return np.asarray(np.where(spread > 0, excess / np.where(spread > 0, spread, 1.0), bare), dtype=np.float64)
