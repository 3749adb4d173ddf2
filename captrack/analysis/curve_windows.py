"""First significant step of a trajectory: a simultaneous scan over windows of consecutive steps (max-T).

A trajectory of K steps is examined through every window [j..k] of consecutive steps (K(K + 1)/2 of them). A
window's statistic is the capability's paired change of the per-item mean over the window's checkpoints (each
item's oriented change averaged over the steps j..k, then the capability's mean over its members' item means,
as capabilities.csv weighs them), standardised by its item-level SE: z = Δ/SE. The units of that SE are the
independent ones of the step verdicts: items, or the source items that shared-item forms draw from, or the
`--cluster` clusters (then t-like draws with G − 1 degrees of freedom). A one-step window is that step's own
verdict: its z is the normal quantile of the verdict's two-sided p-value (shared-item and cluster corrections and
the 0/1 score test included), signed by the verdict, and 0 unless the verdict is regressed or improved.

The windows share items, so their z's are jointly normal with the correlation the items give (the covariance of
the windows' item-level influence, summed per unit). Short windows are penalised (Dümbgen and Spokoiny 2001):
a window of L steps is significant when |z| − PENALTY·√(2·log(e·K/L)) exceeds c, the 1 − α quantile of the same
penalised maximum over SCAN_DRAWS draws of that joint normal (fixed seed, so a table is reproducible). The
penalty spends the error where a sustained change gathers evidence: an m-step window averages away each
checkpoint's own item flips (its SE shrinks towards the base's share), and a single step still flags when its
own evidence is strong. Each multi-step window's draws are t-like with its own effective degrees of freedom
(2U/(κ − 1), κ the kurtosis of the units' influence on it: a sparse 0/1 change's SE is itself noisy, and its z has
fatter tails than a normal's; about 80 for a two-step window of 300 items with 10% of them flipping, a few hundred
for a long one), one χ² quantile per draw shared by all windows; G − 1 with `--cluster` where fewer. A one-step
window's draws are normal (t with G − 1 under `--cluster`): its z is its verdict's own calibrated test. `first_step_significant` is the smallest k such that some window ending at k is
significant. Guarantee (strong control, up to the normal approximation): whatever the true curve, the chance
that any window wholly free of change is called significant is at most α = 5%, so an unchanged capability gets a
first significant step in ≤ 5% of trajectories, and one that changes from step s on is dated before s in ≤ 5%.
A one-step trajectory's first step is its end point's verdict (c is then exactly the 95% normal quantile).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

from captrack.analysis.bootstrap import Items
from captrack.analysis.verdict_tables import Clusters, metric_kind
from captrack.analysis.verdicts import item_changes
from captrack.taxonomy import Taxonomy

__all__ = ["PENALTY", "SCAN_DRAWS", "MemberSteps", "Scan", "first_step", "scan_windows",
           "trajectory_members"]

SCAN_DRAWS = 10_000
"""Draws of the joint normal from which the critical value c is read."""
PENALTY = 1.0
"""Weight of the short-window penalty √(2·log(e·K/L)) (0: the plain max-|z| over the windows)."""
SIGNIFICANT = ("regressed", "improved")


@dataclass(frozen=True)
class MemberSteps:
    """One oriented member of a capability over a trajectory's K steps.

    changes: items x K, each item's oriented change in the margin's unit (verdicts.item_changes) at each step; NaN
        where the item is not scored at that step (unscored is never 0).
    units: per item, the independent unit it belongs to (the item itself, its source item, or its cluster); two
        members' items with the same unit are correlated, items of different units independent.
    """

    changes: NDArray[np.float64]
    units: Sequence[str]


@dataclass(frozen=True)
class Scan:
    """The windows (start, end step indices), their z and penalties, the critical value c, each window's flag and
    the first significant step (None: none)."""

    windows: tuple[tuple[int, int], ...]
    z: NDArray[np.float64]
    penalty: NDArray[np.float64]
    critical: float
    flagged: NDArray[np.bool_]
    first_step: int | None


def scan_windows(steps: Sequence[int], members: Sequence[MemberSteps], verdicts: Sequence[str],
                 p_values: Sequence[float], alpha: float = 0.05, df: float | None = None) -> Scan:
    """The window scan of one capability's trajectory (see the module docstring).

    Args:
        steps: the K steps, in order; verdicts and p_values: each step's capability verdict and its p-value.
        members: the capability's oriented members, each with K columns of item changes.
        df: with clusters, the smallest cluster count − 1 (draws scaled as a multivariate t); None: normal.
    """
    k = len(steps)
    windows = tuple((j, e) for e in range(k) for j in range(e + 1))
    lengths = np.array([e - j + 1 for j, e in windows], dtype=float)
    penalty = PENALTY * np.sqrt(2.0 * np.log(math.e * k / lengths)) if k else np.empty(0)
    single = _single_step_z(verdicts, p_values)
    if k <= 1:  # the end point's verdict: |z| > the 1 − α/2 normal quantile exactly when p < α
        critical = float(norm.ppf(1.0 - alpha / 2.0)) - (float(penalty[0]) if k else 0.0)
        return _result(steps, windows, single[:k].copy(), penalty, critical)
    delta, factor, weights = _window_moments(members, windows, k)
    variance = np.einsum("kw,kl,lw->w", weights, factor.T @ factor, weights, optimize=True)
    se = np.sqrt(np.maximum(variance, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, delta / se, 0.0)
    z = np.where(np.isnan(z), 0.0, z)
    ones = [i for i, (j, e) in enumerate(windows) if j == e]
    z[ones] = single
    critical = _critical(factor, weights, se, penalty, alpha, _df(factor @ weights, [j < e for j, e in windows], df))
    return _result(steps, windows, z, penalty, critical)


def _result(steps: Sequence[int], windows: tuple[tuple[int, int], ...], z: NDArray[np.float64],
            penalty: NDArray[np.float64], critical: float) -> Scan:
    flagged = np.abs(z) - penalty > critical
    ends = [windows[i][1] for i in np.flatnonzero(flagged)]
    first = int(steps[min(ends)]) if ends else None
    return Scan(windows, z, penalty, critical, flagged, first)


def _single_step_z(verdicts: Sequence[str], p_values: Sequence[float]) -> NDArray[np.float64]:
    """Each step's own test as a signed z: Φ⁻¹(1 − p/2), − for regressed, + for improved, 0 otherwise."""
    out = np.zeros(len(verdicts))
    for i, (verdict, p) in enumerate(zip(verdicts, p_values, strict=True)):
        if verdict in SIGNIFICANT and not math.isnan(p):
            size = float(norm.isf(max(p, 1e-300) / 2.0))
            out[i] = -size if verdict == "regressed" else size
    return out


def _window_moments(members: Sequence[MemberSteps], windows: tuple[tuple[int, int], ...],
                    k: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Each window's Δ (the mean over its members of their items' mean change over the window's steps), a factor F
    (units x columns: each unit's summed influence, × √(U/(U − 1))) and weights B (columns x windows) with (FB)'FB
    the windows' covariance: columns are the steps where every item is scored at every step, else the windows."""
    used = [m for m in members if m.changes.size and np.isfinite(m.changes).any()]
    if not used:
        return np.full(len(windows), np.nan), np.zeros((1, len(windows))), np.eye(len(windows))
    keys = np.unique(np.asarray([u for m in used for u in m.units], dtype=object).astype(str), return_inverse=True)[1]
    n_units = int(keys.max()) + 1
    if all(np.isfinite(m.changes).all() for m in used):  # every item at every step: linear in the steps' means
        weights = np.zeros((k, len(windows)))
        for w, (j, e) in enumerate(windows):
            weights[j:e + 1, w] = 1.0 / (e - j + 1)
        delta = np.mean([m.changes.mean(axis=0) for m in used], axis=0) @ weights
        influence = np.vstack([(m.changes - m.changes.mean(axis=0)) / (len(m.changes) * len(used)) for m in used])
        return delta, _scaled(_per_unit(influence, keys, n_units), n_units), weights
    delta, factor = _window_moments_sparse(used, windows, keys, n_units)
    return delta, factor, np.eye(len(windows))


def _window_moments_sparse(used: Sequence[MemberSteps], windows: tuple[tuple[int, int], ...], keys: NDArray[np.intp],
                           n_units: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """As _window_moments where some items are unscored at some steps: per window, each member's items scored at
    every step of it (a member with none is left out of that window's mean)."""
    delta = np.full(len(windows), np.nan)
    influence = np.zeros((sum(len(m.changes) for m in used), len(windows)))
    scored = np.zeros(influence.shape, dtype=bool)
    starts = np.cumsum([0] + [len(m.changes) for m in used])
    for w, (j, e) in enumerate(windows):
        parts = []
        for m, start in zip(used, starts, strict=False):
            block = m.changes[:, j:e + 1]
            rows = np.flatnonzero(np.isfinite(block).all(axis=1))
            if rows.size:
                means = block[rows].mean(axis=1)
                parts.append((start + rows, means))
        if not parts:
            continue
        delta[w] = float(np.mean([means.mean() for _, means in parts]))
        for rows, means in parts:
            influence[rows, w] = (means - means.mean()) / (means.size * len(parts))
            scored[rows, w] = True
    factor = _per_unit(influence, keys, n_units)
    present = np.zeros((n_units, len(windows)), dtype=bool)
    np.logical_or.at(present, keys, scored)
    units = np.maximum(present.sum(axis=0), 2)  # each window's own unit count for its U/(U − 1)
    return delta, factor * np.sqrt(units / (units - 1.0))


def _df(spread: NDArray[np.float64], multi: list[bool], df: float | None) -> NDArray[np.float64]:
    """Each window's degrees of freedom for the draws (inf: normal). A multi-step window's are its effective ones,
    2U/(κ − 1) with κ the kurtosis of the units' influence on it (U − 1 for normal items; a sparse 0/1 change has far
    fewer, and its SE's own error fattens the tails of its z), capped by `df` (clusters); a one-step window's z is its
    verdict's own calibrated test: `df` where clusters give one, else normal."""
    cap = df if df is not None else math.inf
    out = np.full(spread.shape[1], cap)
    squares = spread[:, multi] ** 2
    total, fourth = squares.sum(axis=0), (squares**2).sum(axis=0)
    units = spread.shape[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        kurtosis = np.where(total > 0, units * fourth / np.where(total > 0, total, 1.0) ** 2, 1.0)
    effective = np.where(kurtosis > 1.0, 2.0 * units / np.maximum(kurtosis - 1.0, 1e-12), math.inf)
    out[np.asarray(multi, dtype=bool)] = np.minimum(effective, cap)
    return out


def _per_unit(values: NDArray[np.float64], keys: NDArray[np.intp], n_units: int) -> NDArray[np.float64]:
    out = np.zeros((n_units, values.shape[1]))
    np.add.at(out, keys, values)
    return out


def _scaled(factor: NDArray[np.float64], n_units: int) -> NDArray[np.float64]:
    return factor * math.sqrt(n_units / (n_units - 1.0)) if n_units > 1 else factor


def _critical(factor: NDArray[np.float64], weights: NDArray[np.float64], se: NDArray[np.float64],
              penalty: NDArray[np.float64], alpha: float, df: NDArray[np.float64]) -> float:
    """The 1 − α quantile of max(|z| − penalty) over the windows under the joint null normal, each window's draw
    t-like with its own degrees of freedom `df` (see _t_scale)."""
    live = se > 0
    if not live.any():
        return math.inf
    if factor.shape[0] <= factor.shape[1]:  # fewer units than columns: the factor itself is the square root
        root = factor.T
    else:
        values, vectors = np.linalg.eigh(factor.T @ factor)
        keep = values > max(float(values.max()), 0.0) * 1e-12
        root = vectors[:, keep] * np.sqrt(values[keep])
    standard = (weights.T @ root) / np.where(live, se, 1.0)[:, None]  # windows x r, each live row of norm 1
    standard[~live] = 0.0
    draws = _normals(standard.shape[1]) @ standard.T
    draws *= _t_scale(df)
    np.abs(draws, out=draws)
    draws -= np.where(live, penalty, np.inf)
    return float(np.quantile(draws.max(axis=1), 1.0 - alpha))


@lru_cache(maxsize=64)
def _normals(width: int) -> NDArray[np.float64]:
    out = np.random.default_rng(0).standard_normal((SCAN_DRAWS, width))
    out.setflags(write=False)
    return out


def _t_scale(df: NDArray[np.float64]) -> NDArray[np.float64]:
    """Draws x windows: √(df_w/χ²_{df_w}), one χ² quantile per draw shared by all windows (their SEs are estimated
    from the same units, so their errors move together), from Wilson and Hilferty's cube-root normal approximation
    (fixed seed); 1 where df_w is infinite (normal), inf below 1."""
    g = _chi_normals()[:, None]
    nu = np.where(np.isfinite(df), np.maximum(df, 1.0), 1.0)[None, :]
    root = 1.0 - 2.0 / (9.0 * nu) + g * np.sqrt(2.0 / (9.0 * nu))
    chi = nu * np.maximum(root, 1e-6) ** 3
    scale = np.sqrt(nu / chi)
    scale = np.where(np.isfinite(df)[None, :], scale, 1.0)
    return np.where((df < 1.0)[None, :], np.inf, scale)


@lru_cache(maxsize=1)
def _chi_normals() -> NDArray[np.float64]:
    out = np.random.default_rng(1).standard_normal(SCAN_DRAWS)
    out.setflags(write=False)
    return out


def first_step(steps: Sequence[int], members: Sequence[MemberSteps], verdicts: Sequence[str],
               p_values: Sequence[float], df: float | None = None, alpha: float = 0.05) -> int | None:
    """scan_windows(...).first_step: the first significant step after control over the K steps."""
    return scan_windows(steps, members, verdicts, p_values, alpha, df).first_step



def trajectory_members(variant: str, items: Mapping[int, Items], identities: Mapping[int, Clusters],
                       clusters: Mapping[int, Clusters], sources: Mapping[int, Clusters],
                       taxonomy: Taxonomy) -> dict[str, tuple[list[MemberSteps], float | None]]:
    """Per capability: its oriented members over the trajectory's steps (sorted; one column each) and, with
    `--cluster`, the smallest cluster count − 1 (else None).

    Args:
        items: step -> the step's item means (curves.item_means); identities: step -> each item's identity
            (doc hash and occurrence), aligned with them; clusters / sources: step -> --cluster labels and the
            source ids of shared-item forms, aligned likewise (empty where none).
    """
    steps = sorted(items)
    out: dict[str, tuple[list[MemberSteps], float | None]] = {}
    for capability in (c for g in taxonomy.groups for c in g.capabilities):
        members, counts = [], []
        for member in capability.members:
            if member.direction == "neutral":
                continue
            built = _member_steps(variant, member.task, member.metric, member.direction, steps, items, identities,
                                  clusters, sources)
            if built is not None:
                members.append(built[0])
                counts += [built[1]] if built[1] else []
        out[capability.key] = (members, float(min(counts) - 1) if counts else None)
    return out


def _member_steps(variant: str, task: str, metric: str, direction: str, steps: Sequence[int],
                  items: Mapping[int, Items], identities: Mapping[int, Clusters], clusters: Mapping[int, Clusters],
                  sources: Mapping[int, Clusters]) -> tuple[MemberSteps, int] | None:
    """One member's items x steps oriented changes (NaN where unscored) with each item's unit, and its cluster
    count (0 without clusters); None where no step scores it."""
    key = (variant, task, metric)
    rows: dict[str, int] = {}
    units: list[str] = []
    columns: list[dict[int, float]] = []
    labelled = set()
    for step in steps:
        base, value = items[step].get(key, (np.empty(0), np.empty(0)))
        if not base.size:
            columns.append({})
            continue
        changes = item_changes(base, value, metric_kind(metric, base), direction)
        ids = identities.get(step, {}).get(key)
        own, shared = (clusters.get(step) or {}).get(key), (sources.get(step) or {}).get(key)
        column = {}
        for i, change in enumerate(changes):
            name = str(ids[i]) if ids is not None else str(i)
            if name not in rows:
                rows[name] = len(units)
                units.append(f"{task}\x1fcluster\x1f{own[i]}" if own is not None else
                             f"source\x1f{shared[i]}" if shared is not None else f"{task}\x1fitem\x1f{name}")
            column[rows[name]] = float(change)
        if own is not None:
            labelled |= {str(c) for c in own}
        columns.append(column)
    if not units:
        return None
    matrix = np.full((len(units), len(steps)), np.nan)
    for s, column in enumerate(columns):
        if column:
            matrix[list(column), s] = list(column.values())
    return MemberSteps(matrix, units), len(labelled)
