"""Verdicts: regressed, improved, equivalent or inconclusive, from a paired CI of the oriented change.

For one (task, metric), Δ is the mean per-item change variant − base in the margin's unit, signed so
that + is better (lower-is-better metrics flipped):
- binary and score metrics (values in [0, 1]): points, 100·(variant − base);
- count metrics (words, bullets): percent of the base mean, 100·(variant − base)/mean(base).

Rule, with margin M > 0 in those units:
`regressed` if the 95% CI of Δ lies entirely below 0; `improved` if entirely above 0; otherwise
`equivalent` if the 90% CI lies inside (−M, +M) (two one-sided tests at α = 0.05); otherwise
`inconclusive`. Neutral metrics (no better side) are `changed` where the 95% CI excludes 0.

The CI is a Wald interval on the paired per-item differences. For metrics bounded in [0, 1] two
pseudo-items are added, one half-weighted each at +1 and −1 and one at 0: for binary metrics this is
Agresti and Min's (2005) adjusted interval for a difference of matched proportions (add ½ to each of
n11, n10, n01, n00), which keeps its coverage where few items flipped and, unlike a bootstrap, is not
of width zero when none did (six unchanged items are not evidence of equivalence). With `clusters`,
the variance is the cluster-robust one (items of one cluster summed before squaring). A capability's
Δ is the mean of its members' Δ (neutral members left out), its variance the sum of the members'
(co)variances over m²: members of one task share items and their covariance is estimated from them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "CAPABILITY_VERDICT_COLUMNS",
    "DEFAULT_MARGIN",
    "DRIFT_VERDICT_COLUMNS",
    "VERDICTS",
    "Change",
    "combine_changes",
    "failing_cells",
    "item_changes",
    "paired_change",
    "verdict",
]

DEFAULT_MARGIN = 5.0  # points (binary/score metrics) or percent of the base mean (count metrics)
VERDICTS = ("regressed", "inconclusive", "equivalent", "improved", "changed")
# Columns appended to drift.csv and capabilities.csv (captrack.analysis.verdict_tables fills them in).
DRIFT_VERDICT_COLUMNS = ["change_unit", "oriented_change", "change_ci_low", "change_ci_high", "change_ci90_low",
                         "change_ci90_high", "verdict"]
CAPABILITY_VERDICT_COLUMNS = ["oriented_drift_pct", "oriented_change", "change_ci_low", "change_ci_high",
                              "change_ci90_low", "change_ci90_high", "verdict"]
_Z95, _Z90 = 1.959963984540054, 1.6448536269514722


@dataclass(frozen=True)
class Change:
    """An oriented change with its 95% and 90% CIs, its verdict, and the per-item terms behind it."""

    delta: float
    ci95: tuple[float, float]
    ci90: tuple[float, float]
    verdict: str
    se: float


def verdict(ci95: tuple[float, float], ci90: tuple[float, float], margin: float, oriented: bool = True) -> str:
    """The verdict of a change from its CIs (see the module docstring); '' where a CI is missing."""
    if any(math.isnan(x) for x in (*ci95, *ci90)):
        return ""
    if ci95[0] > 0 or ci95[1] < 0:
        if not oriented:
            return "changed"
        return "improved" if ci95[0] > 0 else "regressed"
    if -margin < ci90[0] and ci90[1] < margin:
        return "equivalent"
    return "inconclusive"


def item_changes(base: NDArray[np.float64], variant: NDArray[np.float64], kind: str, direction: str) -> NDArray[np.float64]:
    """Per-item oriented change in the margin's unit (see the module docstring)."""
    diff = np.asarray(variant, dtype=float) - np.asarray(base, dtype=float)
    if kind == "count":
        mean = float(np.mean(base)) if len(base) else math.nan
        scale = 100.0 / mean if mean not in (0.0,) and not math.isnan(mean) else math.nan
    else:
        scale = 100.0
    sign = -1.0 if direction == "lower" else 1.0
    return np.asarray(sign * scale * diff, dtype=np.float64)


def _cluster_sums(values: NDArray[np.float64], clusters: Sequence[object] | None) -> NDArray[np.float64]:
    if clusters is None:
        return values
    _, inverse = np.unique(np.asarray([str(c) for c in clusters]), return_inverse=True)
    return np.asarray(np.bincount(inverse, weights=values), dtype=np.float64)


def _variance_terms(d: NDArray[np.float64], bounded: bool, clusters: Sequence[object] | None) -> tuple[float, float]:
    """(Δ, variance of Δ) for one member: adjusted Wald, cluster-robust with clusters."""
    n = d.size
    if bounded:  # Agresti–Min pseudo-items: +100 and −100 half-weighted each, 0 once (weights add to 2)
        total = n + 2.0
        delta = float(d.sum()) / total
        if clusters is None:
            second = (float((d * d).sum()) + 100.0**2) / total
            return delta, max(second - delta * delta, 0.0) / total
        resid = _cluster_sums(d - delta, clusters)
        pseudo = 0.5 * (100.0 - delta) ** 2 + 0.5 * (100.0 + delta) ** 2 + delta**2
        return delta, (float((resid**2).sum()) + pseudo) / total**2
    delta = float(d.mean())
    resid = _cluster_sums(d - delta, clusters)
    return delta, float((resid**2).sum()) / n**2


def paired_change(base: NDArray[np.float64], variant: NDArray[np.float64], kind: str, direction: str,
                  margin: float, clusters: Sequence[object] | None = None) -> Change:
    """The oriented change of one (task, metric), its CIs and verdict.

    Args:
        base, variant: per-item values, paired by position.
        kind: the MetricSpec kind (``binary``, ``score`` or ``count``).
        direction: ``higher``, ``lower`` or ``neutral``.
        margin: the equivalence margin M (points, or percent of the base mean for count metrics).
        clusters: per-item cluster labels for a cluster-robust variance (None: items independent).
    """
    if len(base) == 0:
        nan = (math.nan, math.nan)
        return Change(math.nan, nan, nan, "", math.nan)
    d = item_changes(base, variant, kind, direction)
    if np.isnan(d).any():
        nan = (math.nan, math.nan)
        return Change(math.nan, nan, nan, "", math.nan)
    delta, var = _variance_terms(d, kind != "count", clusters)
    return _change(delta, var, margin, direction != "neutral")


def _change(delta: float, var: float, margin: float, oriented: bool) -> Change:
    se = math.sqrt(var)
    ci95 = (delta - _Z95 * se, delta + _Z95 * se)
    ci90 = (delta - _Z90 * se, delta + _Z90 * se)
    if se == 0.0:  # no spread at all (a count metric that did not move on any item): no evidence either way
        return Change(delta, ci95, ci90, "inconclusive", se)
    return Change(delta, ci95, ci90, verdict(ci95, ci90, margin, oriented), se)


def combine_changes(members: Sequence[tuple[str, NDArray[np.float64], NDArray[np.float64], str, str]], margin: float,
                    clusters: dict[str, Sequence[object]] | None = None) -> Change:
    """A capability's (or group's) change: the mean of its oriented members' Δ, with its own CI.

    Args:
        members: (task, base, variant, kind, direction) per member metric; neutral ones are ignored
            unless every member is neutral (then the capability is judged on their raw mean).
        margin: the equivalence margin.
        clusters: task -> per-item cluster labels (cluster-robust covariance within a task).
    """
    oriented = [m for m in members if m[4] != "neutral" and len(m[1])]
    used = oriented or [m for m in members if len(m[1])]
    if not used:
        nan = (math.nan, math.nan)
        return Change(math.nan, nan, nan, "", math.nan)
    by_task: dict[str, list[NDArray[np.float64]]] = {}
    deltas, total_var = [], 0.0
    for task, base, variant, kind, direction in used:
        d = item_changes(base, variant, kind, direction)
        if np.isnan(d).any():
            continue
        delta, var = _variance_terms(d, kind != "count", (clusters or {}).get(task))
        deltas.append(delta)
        total_var += var
        by_task.setdefault(task, []).append(d - d.mean())
    if not deltas:
        nan = (math.nan, math.nan)
        return Change(math.nan, nan, nan, "", math.nan)
    for task, centred in by_task.items():  # covariance of members that share a task's items
        for i in range(len(centred)):
            for j in range(i + 1, len(centred)):
                if centred[i].size == centred[j].size:
                    group = (clusters or {}).get(task)
                    a, b = _cluster_sums(centred[i], group), _cluster_sums(centred[j], group)
                    total_var += 2.0 * float((a * b).sum()) / centred[i].size ** 2
    m = len(deltas)
    return _change(float(np.mean(deltas)), max(total_var, 0.0) / m**2, margin, bool(oriented))


def failing_cells(capabilities: Any, fail_on: str | None) -> list[str]:
    """Capability rows whose verdict fails `--fail-on` (regressed; or regressed and inconclusive), as
    "variant C1: regressed, Δ −4.2 [−6.1, −2.3]" lines."""
    if not fail_on or capabilities is None or len(capabilities) == 0:
        return []
    failing = {"regressed"} if fail_on == "regressed" else {"regressed", "inconclusive"}
    rows = capabilities[(capabilities["level"] == "capability") & capabilities["verdict"].isin(failing)]
    return [f"{variant} {key}: {v}, change {delta:+.1f} [{low:+.1f}, {high:+.1f}]"
            for variant, key, v, delta, low, high in zip(rows["variant"], rows["key"], rows["verdict"],
                                                         rows["oriented_change"], rows["change_ci_low"],
                                                         rows["change_ci_high"], strict=True)]
