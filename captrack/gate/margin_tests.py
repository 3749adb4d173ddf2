"""The gate's tests at a rule's margin: the block rule's p-values, its MDE, and the per-cell warn rate.

A cell blocks when Holm's step-down test (verdicts.holm_rejected, at GATE_ALPHA = 2.5% over the variant's
gating cells) rejects the margin-shifted hypothesis H0: Δ ≥ −M ("not beyond the margin"), so the claim a block
makes, "regressed beyond the margin", holds family-wise: a variant whose every cell sits exactly at −M blocks at
most 2.5% of the time, however many rules the policy has.

Each cell's one-sided p-value of that hypothesis comes from the cell's own interval (the comparison's score,
stratified-score, Wald or cluster-robust interval; a folder on disk holds the interval, not the counts): the
test is read as z = (Δ̂ + M) / s with s = (upper 95% limit − Δ̂) / z₀.₉₇₅, the interval's own spread on the side
of the margin, so p ≤ 2.5% exactly when the 95% CI lies below −M (the single-cell rule, unchanged) and smaller
levels extrapolate on the normal scale.

The blocking MDE: the true regression a rule blocks with 80% power when it is the only cell beyond its margin
(Holm's first step, α/k over the family's k cells), M + (z_{1−α/k} + z₀.₈₀)·SE, with SE the cell's standard error
from its 95% CI's width, which is set by its item count and its observed discordance (0/1 tasks) or spread.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from captrack.analysis.intervals import z_quantile
from captrack.analysis.verdicts import GATE_ALPHA

__all__ = ["POWER", "beyond_pvalue", "block_mde", "null_warn_share", "standard_error", "variant_null_warn_share"]

POWER = 0.80
_Z95 = z_quantile(0.95)  # the 95% interval's two-sided quantile (1.96)
_Z90 = z_quantile(0.90)  # the 90% interval's (1.645)


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def beyond_pvalue(change: float, ci95_high: float, margin: float) -> float:
    """One-sided p-value of H0: Δ ≥ −margin ("not beyond the margin") from the cell's change and upper 95% limit
    (NaN where either is NaN): ≤ 2.5% exactly when the upper limit lies below −margin."""
    if math.isnan(change) or math.isnan(ci95_high) or math.isnan(margin):
        return math.nan
    spread = (ci95_high - change) / _Z95
    if spread <= 0.0:  # an interval of width zero (nothing varied): the change itself decides
        return 0.0 if change < -margin else 1.0
    return _phi((change + margin) / spread)


def standard_error(ci95: tuple[float, float]) -> float:
    """The cell's standard error, from its 95% CI's width (NaN where the CI is)."""
    low, high = ci95
    return (high - low) / (2.0 * _Z95) if not (math.isnan(low) or math.isnan(high)) else math.nan


def block_mde(ci95: tuple[float, float], margin: float, family: int, alpha: float = GATE_ALPHA) -> float:
    """The regression (a positive size, in the cell's units) that blocks with 80% power when this cell is the
    only one of its family of `family` cells beyond its margin: M + (z_{1−α/k} + z₀.₈₀)·SE (NaN without a CI)."""
    se = standard_error(ci95)
    if math.isnan(se) or family < 1:
        return math.nan
    return margin + (z_quantile(1.0 - 2.0 * alpha / family) + z_quantile(2.0 * POWER - 1.0)) * se


def null_warn_share(ci95: tuple[float, float], margin: float) -> float:
    """P(an unchanged cell of this width warns), normal approximation: its 95% CI lies below 0 (a significant
    regression) or its 90% CI reaches below −margin, i.e. Δ̂ < max(−z₀.₉₇₅·SE, −M + z₀.₉₅·SE)."""
    se = standard_error(ci95)
    if math.isnan(se):
        return math.nan
    if se <= 0.0:
        return 0.0
    return _phi(max(-_Z95, _Z90 - margin / se))


def variant_null_warn_share(shares: Iterable[float]) -> float:
    """P(an unchanged variant warns somewhere) from its critical cells' shares, the cells taken as independent."""
    keep = 1.0
    for share in shares:
        if not math.isnan(share):
            keep *= 1.0 - share
    return 1.0 - keep
