"""Minimum detectable effect (80% power) per task and per capability, planned with the verdict's own test.

What a sample of n paired items can tell apart from no change, planned from n and the base rate only
(never from the variant's outcome), so it says what a comparison *could* detect:

- binary metric, base rate p: the smallest change δ that the verdict (captrack.analysis.verdicts: Tango's
  score interval, 95% two-sided, so 2.5% per side) calls `regressed` or `improved` in its direction in 80%
  of runs, by exact enumeration of the verdict rule over the number of discordant items D ~ Bin(n, ψ) and
  the flips in the change's direction given D. The verdict's CI excludes 0 exactly when its score test at 0
  rejects: |g − l| − 1/8 > z·√(g + l) (captrack.analysis.intervals), so the enumeration is a sum over D.
  Planning assumption (stated in power.csv's `assumption`): independent outcomes, the variant's rate moved δ
  from p toward 1/2, so ψ = p(1 − p') + (1 − p)p' (a worst case: real base/variant pairs agree more often,
  and then the MDE is smaller). With `discordance` ψ given (`compare --assume-discordance`), the shares are
  (ψ ± δ)/2 instead, and both MDEs are reported. p is first clipped to [1/(2n), 1 − 1/(2n)].
- other metrics: δ = (z_{1−α/2} + z_{1−β})·√2·s/√n with s the base items' standard deviation
  (ddof = 1), the same independence planning assumption, for the verdict's Wald interval.

The MDE in percent is 100·δ/|base|, on the scale of CapTrack's relative drift. A capability's MDE
combines its member metrics as √(Σ mde_i²)/m, the MDE of a mean of m independent estimates (optimistic
where members are forms of the same items).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from functools import lru_cache

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from scipy.stats import binom

from captrack.analysis.intervals import CONTINUITY

__all__ = ["POWER_COLUMNS", "Z_ALPHA", "Z_BETA", "combined_mde", "detection_power", "mde_binary", "mde_continuous",
           "power_table"]

Z_ALPHA = 1.959963984540054  # z_{1 − 0.05/2}
Z_BETA = 0.8416212335729143  # z_{0.80}
POWER = 0.80

POWER_COLUMNS = ["variant", "task", "metric", "n", "kind", "base_value", "sd_diff", "mde_abs", "mde_pct", "assumption",
                 "discordance", "mde_abs_at_discordance"]
INDEPENDENT = "independent outcomes (worst case), the verdict's score test"


def detection_power(n: int, toward: float, away: float) -> float:
    """P(the verdict calls a change in its direction) on `n` items where a share `toward` of items flips the
    change's way and `away` the other way (exact: a sum over the number of discordant items)."""
    psi = toward + away
    if n <= 0 or psi <= 0:
        return 0.0
    discordant = _likely_counts(n, min(psi, 1.0))
    weight = binom.pmf(discordant, n, min(psi, 1.0))
    keep = weight > 1e-14
    d, w = discordant[keep], weight[keep]
    need = np.floor((d + CONTINUITY + Z_ALPHA * np.sqrt(d)) / 2.0) + 1.0  # fewest flips the change's way that reject
    hit = binom.sf(need - 1.0, d, toward / psi)
    return float((w * np.where(need <= d, hit, 0.0)).sum())


_TAIL = 20.0
"""Hoeffding's bound P(|D − nψ| ≥ t) ≤ 2·exp(−2t²/n) at t = √(_TAIL·n): 2·exp(−40) ≈ 8e-18, far below the
weights detection_power keeps (above 1e-14)."""


def _likely_counts(n: int, psi: float) -> NDArray[np.int64]:
    """The numbers of discordant items D ~ Bin(n, ψ) whose weight can exceed 1e-14: those within √(_TAIL·n) of
    nψ. The weights outside are smaller than detection_power keeps, so leaving them out changes nothing of its
    sum; the ones inside are the same numbers (computed item by item): 5,000 items weighed ~600 counts, not 5,001."""
    reach = math.ceil(math.sqrt(_TAIL * n)) + 1
    return np.arange(max(0, math.floor(n * psi) - reach), min(n, math.ceil(n * psi) + reach) + 1)


def _shares(p: float, delta: float, discordance: float | None) -> tuple[float, float]:
    if discordance is not None:
        return (discordance + delta) / 2.0, (discordance - delta) / 2.0
    moved = p - delta if p >= 0.5 else p + delta  # toward 1/2: the larger discordance
    return (p * (1.0 - moved), (1.0 - p) * moved) if p >= 0.5 else ((1.0 - p) * moved, p * (1.0 - moved))


@lru_cache(maxsize=4096)  # a pure function of (n, rate): every variant of one base asks the same questions again
def mde_binary(n: int, p: float, discordance: float | None = None) -> float:
    """Smallest change in a binary rate the verdict detects with 80% power on `n` items at base rate `p`
    (independent outcomes, or the given discordance ψ); NaN where no change reaches 80%."""
    if n <= 0 or math.isnan(p):
        return math.nan
    p = min(max(p, 0.5 / n), 1.0 - 0.5 / n)
    high = discordance if discordance is not None else max(p, 1.0 - p)

    def power(delta: float) -> float:
        return detection_power(n, *_shares(p, delta, discordance))

    if high <= 0 or power(high) < POWER:
        return math.nan
    low = 0.0
    for _ in range(40):  # power grows with δ (as a step function of the discrete rule): bisection to ~1e-12
        mid = (low + high) / 2.0
        low, high = (mid, high) if power(mid) < POWER else (low, mid)
    return high


def mde_continuous(n: int, sd_diff: float) -> float:
    """(z_{1−α/2} + z_{1−β})·sd_diff/√n: the smallest mean paired difference detectable on `n` items."""
    if n <= 1 or math.isnan(sd_diff):
        return math.nan
    return (Z_ALPHA + Z_BETA) * sd_diff / math.sqrt(n)


def _row(variant: str, task: str, metric: str, base: NDArray[np.float64], discordance: float | None) -> dict[str, object]:
    n = int(base.size)
    base_value = float(base.mean()) if n else math.nan
    binary = bool(n) and bool(np.isin(base, (0.0, 1.0)).all())
    if binary:
        p = min(max(base_value, 0.5 / n), 1.0 - 0.5 / n)
        sd_diff, mde = math.sqrt(2.0 * p * (1.0 - p)), mde_binary(n, base_value)
        assumed = mde_binary(n, base_value, discordance) if discordance is not None else math.nan
        assumption = INDEPENDENT
    else:
        sd_diff = math.sqrt(2.0) * float(base.std(ddof=1)) if n > 1 else math.nan
        mde, assumed, assumption = mde_continuous(n, sd_diff), math.nan, "independent outcomes, Wald"
    pct = 100.0 * mde / abs(base_value) if base_value and not math.isnan(base_value) else math.nan
    return {"variant": variant, "task": task, "metric": metric, "n": n, "kind": "binary" if binary else "score",
            "base_value": base_value, "sd_diff": sd_diff, "mde_abs": mde, "mde_pct": pct, "assumption": assumption,
            "discordance": discordance if discordance is not None and binary else math.nan,
            "mde_abs_at_discordance": assumed}


def power_table(items: dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]],
                discordance: float | None = None) -> pd.DataFrame:
    """One row per (variant, task, metric) of paired items: n, kind, base value, planning SD of the paired
    difference, the MDE as an absolute change and as a percent of the base value under independent outcomes,
    and (with `discordance`, a share of items expected to flip either way) the MDE at that discordance."""
    rows = [_row(v, t, m, base, discordance) for (v, t, m), (base, _) in sorted(items.items())]
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def combined_mde(values: Iterable[float]) -> float:
    """MDE of a plain mean of estimates with MDEs `values`: √(Σ mde_i²)/m (NaN if any is NaN or none given)."""
    found = [float(v) for v in values]
    if not found or any(math.isnan(v) for v in found):
        return math.nan
    return math.sqrt(sum(v * v for v in found)) / len(found)
