"""Verdicts: regressed, improved, equivalent or inconclusive, from a paired CI of the oriented change.

For one (task, metric), Δ is the observed mean per-item change variant − base in the margin's unit, signed
so that + is better (lower-is-better metrics flipped):
- binary and score metrics (values in [0, 1]): points, 100·(variant − base);
- count metrics (words, bullets): percent of the base mean, 100·(variant − base)/mean(base).

Rule, with margin M > 0 in those units:
`regressed` if the 95% CI of Δ lies entirely below 0; `improved` if entirely above 0; otherwise
`equivalent` if the 90% CI lies inside (−M, +M) (two one-sided tests at α = 0.05); otherwise
`inconclusive`. Neutral metrics (no better side) are `changed` where the 95% CI excludes 0. Each change
carries the two-sided p-value of the test its interval inverts (the 95% CI excludes 0 exactly when p < 0.05).

Intervals (captrack.analysis.intervals): a metric whose paired values are all 0/1 gets Tango's score
interval with a 1/8-item continuity correction; other metrics a Wald interval on the per-item differences,
for metrics bounded in [0, 1] with Agresti and Min's (2005) pseudo-items in the variance (one half-weighted
each at +1 and −1, one at 0), so it is never of width zero when nothing moved. With `clusters`, a
cluster-robust variance (CR1, G/(G − 1)) with t(G − 1) quantiles, hulled with the interval without
clusters. A capability's Δ is the mean of its members' Δ (neutral members left out), its variance the sum
of the members' (co)variances over m², covariances taken on the items two members share: the same task's
items, or forms of the same source items (`sources`). Where a member is 0/1, the capability's interval
inverts a stratified score test (captrack.analysis.capability_score): each 0/1 member's variance is Tango's
constrained one at the tested change, so a capability of a few small members keeps the single task's
small-sample behaviour (method `stratified-score`); otherwise it is the Wald interval of that variance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.capability_score import ScoreMember, combined_pvalue, combined_score
from captrack.analysis.intervals import (
    score_limits,
    score_pvalue,
    t_quantile,
    wald_pvalue,
    z_quantile,
)

__all__ = ["CAPABILITY_VERDICT_COLUMNS", "DEFAULT_MARGIN", "DRIFT_VERDICT_COLUMNS", "GATE_ALPHA",
           "SIGNIFICANT_VERDICTS", "VERDICTS", "Change", "combine_changes", "failing_cells", "gate_family",
           "holm_rejected", "item_changes", "paired_change", "regression_pvalue", "verdict"]

DEFAULT_MARGIN = 5.0  # points (binary/score metrics) or percent of the base mean (count metrics)
VERDICTS = ("regressed", "inconclusive", "equivalent", "improved", "changed")
SIGNIFICANT_VERDICTS = ("regressed", "improved", "changed")  # the 95% CI of the change excludes 0
# Columns appended to drift.csv and capabilities.csv (captrack.analysis.verdict_tables fills them in).
DRIFT_VERDICT_COLUMNS = ["change_unit", "oriented_change", "change_ci_low", "change_ci_high", "change_ci90_low",
                         "change_ci90_high", "verdict", "p_value", "change_method"]
CAPABILITY_VERDICT_COLUMNS = ["oriented_drift_pct", "oriented_change", "change_ci_low", "change_ci_high",
                              "change_ci90_low", "change_ci90_high", "verdict", "p_value", "change_method"]


@dataclass(frozen=True)
class Change:
    """An oriented change with its 95% and 90% CIs, its verdict, and the per-item terms behind it."""

    delta: float
    ci95: tuple[float, float]
    ci90: tuple[float, float]
    verdict: str
    se: float
    p_value: float = math.nan  # two-sided, the interval's own test: ci95 excludes 0 exactly when p < 0.05
    method: str = ""  # "score" (Tango), "wald", "cluster-robust", or "<method>+cluster-robust" (their hull)


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
    """(Δ, variance of Δ) for one member: adjusted Wald; with clusters, cluster-robust CR1 (× G/(G − 1))."""
    n = d.size
    if bounded:  # Agresti–Min pseudo-items: +100 and −100 half-weighted each, 0 once (weights add to 2)
        total = n + 2.0
        delta = float(d.sum()) / total
        if clusters is None:
            second = (float((d * d).sum()) + 100.0**2) / total
            return delta, max(second - delta * delta, 0.0) / total
        resid = _cluster_sums(d - delta, clusters)
        pseudo = 0.5 * (100.0 - delta) ** 2 + 0.5 * (100.0 + delta) ** 2 + delta**2
        return delta, _cr1(resid.size) * (float((resid**2).sum()) + pseudo) / total**2
    delta = float(d.mean())
    resid = _cluster_sums(d - delta, clusters)
    return delta, (_cr1(resid.size) if clusters is not None else 1.0) * float((resid**2).sum()) / n**2


def _cr1(groups: int) -> float:
    """CR1's small-sample factor G/(G − 1) (inf below two clusters: one cluster says nothing of its spread)."""
    return groups / (groups - 1.0) if groups > 1 else math.inf


def _groups(clusters: Sequence[object] | None) -> int:
    return len({str(c) for c in clusters}) if clusters is not None else 0


def _empty() -> Change:
    nan = (math.nan, math.nan)
    return Change(math.nan, nan, nan, "", math.nan)


def paired_change(base: NDArray[np.float64], variant: NDArray[np.float64], kind: str, direction: str,
                  margin: float, clusters: Sequence[object] | None = None) -> Change:
    """The oriented change of one (task, metric), its CIs, p-value and verdict.

    Args:
        base, variant: per-item values, paired by position.
        kind: the MetricSpec kind (``binary``, ``score`` or ``count``).
        direction: ``higher``, ``lower`` or ``neutral``.
        margin: the equivalence margin M (points, or percent of the base mean for count metrics).
        clusters: per-item cluster labels for a cluster-robust variance (None: items independent).
    """
    if len(base) == 0:
        return _empty()
    d = item_changes(base, variant, kind, direction)
    if np.isnan(d).any():
        return _empty()
    oriented = direction != "neutral"
    if kind != "count" and bool(np.isin(d, (-100.0, 0.0, 100.0)).all()):
        return _binary_change(d, margin, oriented, clusters)
    _, var = _variance_terms(d, kind != "count", None)
    change = _wald(float(d.mean()), var, None)
    if clusters is not None:
        _, cvar = _variance_terms(d, kind != "count", clusters)
        change = _hull(change, _wald(change.delta, cvar, _groups(clusters) - 1.0))
    return _judged(change, margin, oriented, kind != "count")


def _judged(change: Change, margin: float, oriented: bool, bounded: bool = False) -> Change:
    if bounded:  # a change of a [0, 1] metric lies within ±100 points: so does its interval
        change = replace(change, ci95=_clipped(change.ci95), ci90=_clipped(change.ci90))
    if change.se == 0.0:  # no spread at all (a count metric that did not move on any item): no evidence either way
        return replace(change, verdict="inconclusive")
    return replace(change, verdict=verdict(change.ci95, change.ci90, margin, oriented))


def _clipped(ci: tuple[float, float]) -> tuple[float, float]:
    return max(ci[0], -100.0), min(ci[1], 100.0)


def _binary_change(d: NDArray[np.float64], margin: float, oriented: bool,
                   clusters: Sequence[object] | None) -> Change:
    """A 0/1 metric's change: Tango's score interval (captrack.analysis.intervals), hulled with CR1 + t(G − 1)."""
    n, gains, losses = d.size, int((d > 0).sum()), int((d < 0).sum())
    low95, high95 = score_limits(gains, losses, n, 0.95)
    low90, high90 = score_limits(gains, losses, n, 0.90)
    _, var = _variance_terms(d, True, None)
    change = Change(100.0 * (gains - losses) / n, (100.0 * float(low95), 100.0 * float(high95)),
                    (100.0 * float(low90), 100.0 * float(high90)), "", math.sqrt(var),
                    _score_p(gains, losses), "score")
    if clusters is not None:
        _, cvar = _variance_terms(d, True, clusters)
        change = _hull(change, _wald(change.delta, cvar, _groups(clusters) - 1.0))
    return _judged(change, margin, oriented, True)


@lru_cache(maxsize=1 << 16)  # the same few (gains, losses) again and again across a board's cells
def _score_p(gains: int, losses: int) -> float:
    return float(score_pvalue(gains, losses))


def _wald(delta: float, var: float, df: float | None) -> Change:
    """A Wald interval around `delta` (t(df) quantiles when df is given: cluster-robust)."""
    se = math.sqrt(var)
    q95, q90 = (t_quantile(level, df) if df is not None else z_quantile(level) for level in (0.95, 0.90))
    method = "cluster-robust" if df is not None else "wald"
    if math.isinf(se) or math.isinf(q95):
        return Change(delta, (-math.inf, math.inf), (-math.inf, math.inf), "", math.inf, 1.0, method)
    return Change(delta, (delta - q95 * se, delta + q95 * se), (delta - q90 * se, delta + q90 * se), "", se,
                  wald_pvalue(delta, se, df), method)


def _hull(plain: Change, clustered: Change) -> Change:
    """The hull of the intervals with and without clusters: never narrower than either (p: the larger)."""
    ci95 = (min(plain.ci95[0], clustered.ci95[0]), max(plain.ci95[1], clustered.ci95[1]))
    ci90 = (min(plain.ci90[0], clustered.ci90[0]), max(plain.ci90[1], clustered.ci90[1]))
    p = max(plain.p_value, clustered.p_value) if not math.isnan(clustered.p_value) else plain.p_value
    return Change(plain.delta, ci95, ci90, "", max(plain.se, clustered.se), p, f"{plain.method}+cluster-robust")


Member = tuple[str, NDArray[np.float64], NDArray[np.float64], str, str]
"""(task, base, variant, kind, direction) of one member metric of a capability or group."""


def combine_changes(members: Sequence[Member], margin: float, clusters: dict[str, Sequence[object]] | None = None,
                    sources: dict[str, Sequence[object]] | None = None) -> Change:
    """A capability's (or group's) change: the mean of its oriented members' observed Δ, with its own CI.

    The variance is Σ_ij cov(Δ_i, Δ_j)/m²: each member's own (a 0/1 member's at the tested change, the interval a
    stratified score test's; otherwise adjusted Wald; CR1 with clusters) and the
    covariance of every two members on the items they share, matched by source item (`sources`: task -> each
    item's source id, e.g. the gsm8k forms' ``gsm8k-test-17``); members of one task match by position. A
    single member's change is its own (paired_change).

    Args:
        members: (task, base, variant, kind, direction) per member metric; neutral ones are ignored
            unless every member is neutral (then the capability is judged on their raw mean).
        margin: the equivalence margin.
        clusters: task -> per-item cluster labels (cluster-robust covariance within a task; t(G − 1) quantiles).
        sources: task -> per-item source ids, for tasks whose items are forms of another task's items.
    """
    oriented = [m for m in members if m[4] != "neutral" and len(m[1])]
    used = [m for m in (oriented or [m for m in members if len(m[1])])
            if not np.isnan(item_changes(m[1], m[2], m[3], m[4])).any()]
    if not used:
        return _empty()
    if len(used) == 1:
        task, base, variant, kind, direction = used[0]
        return paired_change(base, variant, kind, direction, margin, (clusters or {}).get(task))
    changes = [item_changes(m[1], m[2], m[3], m[4]) for m in used]
    m = len(used)
    change = _members_change(used, changes, sources)
    grouped = {u[0]: (clusters or {})[u[0]] for u in used if u[0] in (clusters or {})}
    if grouped:
        df = min(_groups(labels) for labels in grouped.values()) - 1.0
        change = _hull(change, _wald(change.delta, _combined_variance(used, changes, grouped, sources) / m**2, df))
    return _judged(change, margin, bool(oriented), all(u[3] != "count" for u in used))


def _members_change(used: Sequence[Member], changes: Sequence[NDArray[np.float64]],
                    sources: dict[str, Sequence[object]] | None) -> Change:
    """The members' mean change without clusters: the stratified score interval where a member is 0/1
    (captrack.analysis.capability_score), else the Wald interval of the summed (co)variances."""
    own, terms = _variance_parts(used, changes, None, sources)
    m, shared = len(used), float(sum(terms))
    delta = float(np.mean([d.mean() for d in changes]))
    binary = [u[3] != "count" and bool(np.isin(d, (-100.0, 0.0, 100.0)).all()) for u, d in zip(used, changes, strict=True)]
    if not any(binary):
        return _wald(delta, max(sum(own) + shared, 0.0) / m**2, None)
    members = [ScoreMember(float(d.mean()), int((d > 0).sum()), int((d < 0).sum()), d.size) if flag
               else ScoreMember(float(d.mean()), variance=var) for d, flag, var in zip(changes, binary, own, strict=True)]
    ci95, ci90 = (combined_score(members, shared, level) for level in (0.95, 0.90))
    return Change(delta, ci95, ci90, "", math.sqrt(max(sum(own) + shared, 0.0)) / m, combined_pvalue(members, shared),
                  "stratified-score")


def _combined_variance(used: Sequence[Member], changes: Sequence[NDArray[np.float64]],
                       clusters: dict[str, Sequence[object]] | None, sources: dict[str, Sequence[object]] | None) -> float:
    """m² times the variance of the members' mean change (see combine_changes)."""
    own, shared = _variance_parts(used, changes, clusters, sources)
    total = 0.0
    for term in (*own, *shared):  # in this order, so that every figure stays what it was
        total += term
    return max(total, 0.0)


def _variance_parts(used: Sequence[Member], changes: Sequence[NDArray[np.float64]],
                    clusters: dict[str, Sequence[object]] | None, sources: dict[str, Sequence[object]] | None
                    ) -> tuple[list[float], list[float]]:
    """Each member's own variance of its change, and the terms of Σ_{i≠j} of their covariances (m² times the mean's)."""
    own: list[float] = []
    shared: list[float] = []
    # a member's centred changes over n: keyed (sorted unique keys, their sums), or by position
    shares: list[tuple[NDArray[Any], NDArray[np.float64]] | NDArray[np.float64]] = []
    for (task, _, _, kind, _), d in zip(used, changes, strict=True):
        labels, ids = (clusters or {}).get(task), (sources or {}).get(task)
        own.append(_variance_terms(d, kind != "count", labels)[1])
        centred = (d - d.mean()) / d.size
        if labels is not None:  # a cluster's items are summed first: the cluster is what two members share
            shares.append(_keyed([f"{task}\x1fcluster\x1f{c}" for c in labels], centred))
        elif ids is not None and len(ids) == d.size:
            shares.append(_keyed([str(s) for s in ids], centred))
        else:
            shares.append(centred)
    places = [{key: i for i, key in enumerate(share[0].tolist())} if isinstance(share, tuple) else None for share in shares]
    for i in range(len(shares)):
        for j in range(i + 1, len(shares)):
            a, b = shares[i], shares[j]
            if isinstance(a, tuple) and isinstance(b, tuple):  # the keys both have, in sorted order (an inner align)
                common = sorted(places[i].keys() & places[j].keys())  # type: ignore[union-attr]
                if not common:  # np.dot of nothing adds 0.0: the total as it is
                    continue
                a = a[1][[places[i][key] for key in common]]  # type: ignore[index]
                b = b[1][[places[j][key] for key in common]]  # type: ignore[index]
            elif isinstance(a, tuple) or isinstance(b, tuple) or used[i][0] != used[j][0] or a.size != b.size:
                continue  # keyed against positional, or two tasks without source ids: no item in common
            factor = _cr1(a.size) if clusters and used[i][0] in clusters and used[j][0] in clusters else 1.0
            shared.append(2.0 * factor * float(np.dot(a, b)))
    return own, shared


def _keyed(keys: list[str], values: NDArray[np.float64]) -> tuple[NDArray[Any], NDArray[np.float64]]:
    """The sums of `values` per key, as sorted unique keys and their sums: each value itself when no key repeats,
    else pandas' groupby sum (its compensated summation, so every figure stays what it was)."""
    unique, first, counts = np.unique(np.asarray(keys, dtype=object), return_index=True, return_counts=True)
    if counts.size == len(keys):
        return unique, values[first]
    sums = pd.Series(values, index=keys).groupby(level=0).sum()
    return sums.index.to_numpy(dtype=object), sums.to_numpy(dtype=float)


GATE_ALPHA = 0.025
"""The gate's family-wise error per variant and side: a cell fails only where its verdict is `regressed`."""


def regression_pvalue(p_value: float, change: float) -> float:
    """One-sided p-value for a regression (change < 0) from the verdict's two-sided p-value and the change's sign."""
    if math.isnan(p_value) or math.isnan(change):
        return math.nan
    return p_value / 2.0 if change < 0 else 1.0 - p_value / 2.0


def holm_rejected(pvalues: Sequence[float], alpha: float = GATE_ALPHA) -> list[bool]:
    """Holm's (1979) step-down test of each p-value at family-wise error `alpha` (NaN never rejected)."""
    order = sorted((p, i) for i, p in enumerate(pvalues) if not math.isnan(p))
    rejected = [False] * len(pvalues)
    for rank, (p, i) in enumerate(order):
        if p > alpha / (len(order) - rank):
            break
        rejected[i] = True
    return rejected


def gate_family(capabilities: Any, drift: Any = None) -> Any:
    """What `--fail-on regressed` checks, one row per cell: each variant's oriented capabilities and its
    (task, metric)s outside the taxonomy, with the one-sided p-value of a regression and Holm's decision
    at GATE_ALPHA per variant (columns variant, key, verdict, oriented_change, change_ci_low, change_ci_high,
    p_regressed, holm_fails)."""
    columns = ["variant", "key", "verdict", "oriented_change", "change_ci_low", "change_ci_high", "p_value"]
    parts = []
    if capabilities is not None and len(capabilities):
        caps = capabilities[capabilities["level"] == "capability"]
        parts.append(caps.reindex(columns=columns))
    if drift is not None and len(drift):
        outside = drift[drift["capability"].fillna("").astype(str) == ""]
        outside = outside.drop_duplicates(["variant", "task", "metric"])
        parts.append(outside.assign(key=outside["task"].astype(str) + "/" + outside["metric"].astype(str)
                                    + " (not in the taxonomy)").reindex(columns=columns))
    family = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
    family = family[family["verdict"].isin(["regressed", "improved", "equivalent", "inconclusive"])].copy()
    family["p_regressed"] = [regression_pvalue(float(p), float(c))
                             for p, c in zip(family["p_value"], family["oriented_change"], strict=True)]
    fails = pd.Series(False, index=family.index)
    for _, rows in family.groupby("variant", sort=False):
        decided = holm_rejected(rows["p_regressed"].tolist())
        fails[rows.index] = [d and v == "regressed" for d, v in zip(decided, rows["verdict"], strict=True)]
    family["holm_fails"] = fails
    return family


def failing_cells(capabilities: Any, fail_on: str | None, drift: Any = None) -> list[str]:
    """Cells failing `--fail-on`, as "variant C1: regressed, change −4.2 [−6.1, −2.3]" lines.

    `regressed`: a capability (or a (task, metric) outside the taxonomy, from `drift`) whose regression Holm's
    test rejects at a family-wise error of GATE_ALPHA over the cells each variant's gate checks (gate_family);
    `inconclusive`: those, and every cell whose verdict is inconclusive.
    """
    if not fail_on:
        return []
    family = gate_family(capabilities, drift)
    failing = family["holm_fails"] | ((family["verdict"] == "inconclusive") if fail_on == "inconclusive" else False)
    rows = family[failing]
    return [f"{variant} {key}: {v}, change {delta:+.1f} [{low:+.1f}, {high:+.1f}], one-sided p {p:.2g}"
            for variant, key, v, delta, low, high, p in zip(rows["variant"], rows["key"], rows["verdict"],
                                                            rows["oriented_change"], rows["change_ci_low"],
                                                            rows["change_ci_high"], rows["p_regressed"], strict=True)]
