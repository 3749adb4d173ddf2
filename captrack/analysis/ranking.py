"""Which post-training algorithm drifts more: mean |capability drift| per algorithm, with a paired
bootstrap CI on the difference between two algorithms.

An algorithm's magnitude is the mean over its variants of the mean |drift| over the capabilities every
variant of the comparison has a drift for. Its bootstrap samples reuse the items' resamples of
captrack.analysis.bootstrap (the same resample index for every variant of a task with the same items),
so the difference A − B is resampled item by item jointly; the CI is the percentile interval of those
differences. A ranking is supported only where that CI excludes 0.
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.stats import percentile_ci
from captrack.taxonomy import Taxonomy

__all__ = ["CONTRAST_COLUMNS", "algorithm_contrasts"]

CONTRAST_COLUMNS = [
    "base", "algorithm_a", "algorithm_b", "mean_abs_drift_a", "mean_abs_drift_b", "difference", "ci_low", "ci_high",
    "n_capabilities",
]
Boot = dict[tuple[str, str, str], NDArray[np.float64]]


def _capability_drift(members: list[tuple[str, str, float]], boot: Boot, variant: str) -> tuple[float, NDArray[np.float64] | None]:
    """A capability's point drift (mean of its scored members: (task, metric, drift)) and its bootstrap samples
    (None without any)."""
    scored = [(t, m, d) for t, m, d in members if not math.isnan(d)]
    point = float(np.mean([d for _, _, d in scored])) if scored else math.nan
    stacked = [boot[(variant, t, m)] for t, m, _ in scored if (variant, t, m) in boot]
    if not stacked or len(stacked) != len(scored):
        return point, None
    with warnings.catch_warnings():  # a resample where every member's drift is NaN stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return point, np.nanmean(np.vstack(stacked), axis=0)


def _magnitudes(drift: pd.DataFrame, boot: Boot, taxonomy: Taxonomy) -> dict[str, tuple[float, NDArray[np.float64] | None]]:
    """Per algorithm: mean |capability drift| over its variants, and its bootstrap samples."""
    tracked = drift[drift["capability"] != ""]
    points: dict[str, dict[str, tuple[float, NDArray[np.float64] | None]]] = {}
    rows = list(zip(tracked["task"], tracked["metric"], tracked["rel_drift_pct"].to_numpy(dtype=float), strict=True))
    for variant, at in tracked.groupby("variant", sort=True).indices.items():
        members: dict[str, list[tuple[str, str, float]]] = {}
        for i, capability in zip(at, tracked["capability"].to_numpy()[at], strict=True):
            members.setdefault(str(capability), []).append(rows[i])
        points[str(variant)] = {c.key: _capability_drift(members.get(c.key, []), boot, str(variant))
                                for c in taxonomy.capabilities}
    common = [c.key for c in taxonomy.capabilities
              if points and all(not math.isnan(p[c.key][0]) for p in points.values())]
    algorithms = drift.drop_duplicates("variant").set_index("variant")["algorithm"]
    out: dict[str, tuple[float, NDArray[np.float64] | None]] = {}
    for algorithm in sorted({str(a) for a in algorithms if a}):
        variants = [v for v in points if algorithms.get(v) == algorithm]
        if not variants or not common:
            continue
        value = float(np.mean([np.mean([abs(points[v][c][0]) for c in common]) for v in variants]))
        samples = {(v, c): points[v][c][1] for v in variants for c in common}
        found = {key: s for key, s in samples.items() if s is not None}
        if len(found) < len(samples):
            out[algorithm] = (value, None)
            continue
        per_variant = [np.mean(np.abs(np.vstack([found[(v, c)] for c in common])), axis=0) for v in variants]
        out[algorithm] = (value, np.mean(np.vstack(per_variant), axis=0))
    return out


def algorithm_contrasts(drift: pd.DataFrame, boot: Boot, taxonomy: Taxonomy, level: float = 0.95, base: str = "") -> pd.DataFrame:
    """One row per pair of algorithms (a before b alphabetically): mean |drift| of each, a − b and its CI.

    Args:
        drift: per (variant, task, metric) rows with algorithm, capability and rel_drift_pct.
        boot: bootstrap samples of each (variant, task, metric)'s drift (captrack.analysis.bootstrap).
    """
    if drift.empty:
        return pd.DataFrame(columns=CONTRAST_COLUMNS)
    magnitudes = _magnitudes(drift, boot, taxonomy)
    n_caps = _common_count(drift, taxonomy)
    rows = []
    for a, b in itertools.combinations(sorted(magnitudes), 2):
        (value_a, samples_a), (value_b, samples_b) = magnitudes[a], magnitudes[b]
        low, high = (percentile_ci(samples_a - samples_b, level) if samples_a is not None and samples_b is not None
                     else (math.nan, math.nan))
        rows.append({"base": base, "algorithm_a": a, "algorithm_b": b, "mean_abs_drift_a": value_a, "mean_abs_drift_b": value_b,
                     "difference": value_a - value_b, "ci_low": low, "ci_high": high, "n_capabilities": n_caps})
    return pd.DataFrame(rows, columns=CONTRAST_COLUMNS)


def _common_count(drift: pd.DataFrame, taxonomy: Taxonomy) -> int:
    scored = drift[(drift["capability"] != "") & drift["rel_drift_pct"].notna()]
    per_variant = [set(f["capability"]) for _, f in scored.groupby("variant")]
    keys = {c.key for c in taxonomy.capabilities}
    return len(set.intersection(keys, *per_variant)) if per_variant else 0
