"""Minimum detectable effect (80% power, two-sided α = 0.05, paired) per task and per capability.

What a sample of n paired items can tell apart from no change, planned from n and the base rate only
(never from the variant's outcome), so it says what a comparison *could* detect:

- binary metric, base rate p: McNemar's test in Connor's (1987) normal approximation. With ψ the
  expected share of discordant items, the smallest detectable change δ in the rate solves
  √n·δ = z_{1−α/2}·√ψ + z_{1−β}·√(ψ − δ²); captrack plans with ψ = 2p(1 − p) + δ·|1 − 2p|, the
  discordance of independent outcomes at the base rate p and the changed rate p ± δ (the side toward
  1/2, the larger discordance; conservative: real base/variant pairs agree more often). At p = 1/2 this
  is 2p(1 − p); near 0 or 1 it keeps ψ ≥ δ, since a change of δ flips at least δ of the items (ψ =
  2p(1 − p) alone would call a change of 10 points on a task solved on every item detectable on
  30 items). p is first clipped to [1/(2n), 1 − 1/(2n)].
- other metrics: δ = (z_{1−α/2} + z_{1−β})·√2·s/√n with s the base items' standard deviation
  (ddof = 1), the same independence planning assumption.

The MDE in percent is 100·δ/|base|, on the scale of CapTrack's relative drift. A capability's MDE
combines its member metrics as √(Σ mde_i²)/m, the MDE of a mean of m independent estimates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd
from numpy.typing import NDArray

__all__ = ["POWER_COLUMNS", "Z_ALPHA", "Z_BETA", "combined_mde", "mde_binary", "mde_continuous", "power_table"]

Z_ALPHA = 1.959963984540054  # z_{1 − 0.05/2}
Z_BETA = 0.8416212335729143  # z_{0.80}

POWER_COLUMNS = ["variant", "task", "metric", "n", "kind", "base_value", "sd_diff", "mde_abs", "mde_pct"]


def mde_binary(n: int, p: float) -> float:
    """Smallest change in a binary rate McNemar detects on `n` paired items at base rate `p` (NaN: n too small)."""
    if n <= 0 or math.isnan(p):
        return math.nan
    p = min(max(p, 0.5 / n), 1.0 - 0.5 / n)
    root_n, tilt = math.sqrt(n), abs(1.0 - 2.0 * p)

    def gap(delta: float) -> float:  # grows with δ: negative while δ is too small to detect
        psi = 2.0 * p * (1.0 - p) + delta * tilt
        return root_n * delta - Z_ALPHA * math.sqrt(psi) - Z_BETA * math.sqrt(max(psi - delta * delta, 0.0))

    low, high = 0.0, max(p, 1.0 - p)  # the largest change toward 1/2
    if gap(high) < 0:
        return math.nan
    for _ in range(80):
        mid = (low + high) / 2.0
        low, high = (mid, high) if gap(mid) < 0 else (low, mid)
    return high


def mde_continuous(n: int, sd_diff: float) -> float:
    """(z_{1−α/2} + z_{1−β})·sd_diff/√n: the smallest mean paired difference detectable on `n` items."""
    if n <= 1 or math.isnan(sd_diff):
        return math.nan
    return (Z_ALPHA + Z_BETA) * sd_diff / math.sqrt(n)


def _row(variant: str, task: str, metric: str, base: NDArray[np.float64]) -> dict[str, object]:
    n = int(base.size)
    base_value = float(base.mean()) if n else math.nan
    binary = bool(n) and bool(np.isin(base, (0.0, 1.0)).all())
    if binary:
        p = min(max(base_value, 0.5 / n), 1.0 - 0.5 / n)
        sd_diff, mde = math.sqrt(2.0 * p * (1.0 - p)), mde_binary(n, base_value)
    else:
        sd_diff = math.sqrt(2.0) * float(base.std(ddof=1)) if n > 1 else math.nan
        mde = mde_continuous(n, sd_diff)
    pct = 100.0 * mde / abs(base_value) if base_value and not math.isnan(base_value) else math.nan
    return {"variant": variant, "task": task, "metric": metric, "n": n, "kind": "binary" if binary else "score",
            "base_value": base_value, "sd_diff": sd_diff, "mde_abs": mde, "mde_pct": pct}


def power_table(items: dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]) -> pd.DataFrame:
    """One row per (variant, task, metric) of paired items: n, kind, base value, planning SD of the paired
    difference, and the MDE as an absolute change and as a percent of the base value."""
    rows = [_row(v, t, m, base) for (v, t, m), (base, _) in sorted(items.items())]
    return pd.DataFrame(rows, columns=POWER_COLUMNS)


def combined_mde(values: Iterable[float]) -> float:
    """MDE of a plain mean of estimates with MDEs `values`: √(Σ mde_i²)/m (NaN if any is NaN or none given)."""
    found = [float(v) for v in values]
    if not found or any(math.isnan(v) for v in found):
        return math.nan
    return math.sqrt(sum(v * v for v in found)) / len(found)
