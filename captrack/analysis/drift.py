"""CapTrack relative drift, oriented drift, and capability / group aggregation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.power import combined_mde
from captrack.analysis.verdicts import CAPABILITY_VERDICT_COLUMNS
from captrack.taxonomy import Taxonomy

__all__ = [
    "aggregate_capabilities",
    "compatible_table",
    "oriented_drift",
    "relative_drift",
    "with_membership",
]


def relative_drift(base: float, variant: float) -> float:
    """CapTrack's relative drift in percent: 100·(variant − base)/base; NaN when base is 0 or NaN."""
    if base == 0 or math.isnan(base) or math.isnan(variant):
        return math.nan
    return 100.0 * (variant - base) / base


def relative_drift_array(base: NDArray[np.float64], variant: NDArray[np.float64]) -> NDArray[np.float64]:
    """Vectorised relative_drift (NaN where base is 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = 100.0 * (variant - base) / base
    out[~np.isfinite(out)] = np.nan
    return out


def oriented_drift(rel: float, direction: str) -> float:
    """Drift with the sign saying better (+) or worse (−); neutral metrics give |change|."""
    if direction == "lower":
        return -rel
    if direction == "neutral":
        return abs(rel)
    return rel


def with_membership(rows: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """Attach capability, group, facet and direction to (task, metric) rows, one row per membership.

    Rows whose (task, metric) the taxonomy does not track keep an empty capability.
    """
    members = pd.DataFrame(
        [
            {"task": m.task, "metric": m.metric, "capability": m.capability, "group": m.group,
             "facet": m.facet, "direction": m.direction}
            for m in taxonomy.members
        ]
    )
    merged = rows.merge(members, on=["task", "metric"], how="left")
    merged[["capability", "group", "facet"]] = merged[["capability", "group", "facet"]].fillna("")
    return merged


def aggregate_capabilities(
    drift: pd.DataFrame,
    taxonomy: Taxonomy,
    value: str = "rel_drift_pct",
    boot: dict[tuple[str, str, str], NDArray[np.float64]] | None = None,
) -> pd.DataFrame:
    """Capability rows (plain mean and population std of member drifts, NaN dropped) and group rows.

    Args:
        drift: rows with variant, algorithm, task, metric, capability, group, and `value`;
            optional forgetting / backward_transfer columns are averaged alongside, and an optional
            mde_pct column (per-metric minimum detectable effect) is combined as √(Σ mde²)/m over the
            members with a drift (captrack.analysis.power.combined_mde); NaN without it.
        boot: optional bootstrap samples of the drift per (variant, task, metric), all of one
            length; capability and group CIs come from the same resample index across members.
    """
    rows: list[dict[str, object]] = []
    for (variant, algorithm), frame in drift.groupby(["variant", "algorithm"], sort=False):
        cols = _columns(frame, value)
        cap_means: dict[str, float] = {}
        cap_mde: dict[str, float] = {}
        cap_boot: dict[str, NDArray[np.float64]] = {}
        of_capability = frame.groupby("capability", sort=False).indices  # positions, in frame order
        for cap in taxonomy.capabilities:
            at = of_capability.get(cap.key, np.empty(0, dtype=np.int64))
            values = cols[value][at]
            finite = values[~np.isnan(values)]
            mean = float(finite.mean()) if finite.size else math.nan
            cap_means[cap.key] = mean
            cap_mde[cap.key] = _member_mde(cols, at[~np.isnan(values)])
            samples = _member_boot(boot, variant, cols, at)
            if samples is not None:
                cap_boot[cap.key] = samples
            rows.append(
                _row(variant, algorithm, "capability", cap.key, mean,
                     float(finite.std(ddof=0)) if finite.size else math.nan,
                     samples, cols, at, int(finite.size)) | {"mde_pct": cap_mde[cap.key]}
            )
        for group in taxonomy.groups:
            means = np.array([cap_means[c.key] for c in group.capabilities])
            finite = means[~np.isnan(means)]
            stacked = [cap_boot[c.key] for c in group.capabilities if c.key in cap_boot]
            samples = _nanmean_rows(stacked) if stacked else None
            at = np.flatnonzero(cols["group"] == group.key)
            scored = [cap_mde[c.key] for c in group.capabilities if not math.isnan(cap_means[c.key])]
            rows.append(
                _row(variant, algorithm, "group", group.key,
                     float(finite.mean()) if finite.size else math.nan,
                     float(finite.std(ddof=0)) if finite.size else math.nan,
                     samples, cols, at, int((~np.isnan(cols[value][at])).sum()))
                | {"mde_pct": combined_mde(scored)}
            )
    return pd.DataFrame(rows, columns=CAPABILITY_COLUMNS[:CAPABILITY_COLUMNS.index("oriented_drift_pct")])


CAPABILITY_COLUMNS = [
    "variant", "algorithm", "level", "key", "mean_rel_drift_pct", "std_rel_drift_pct",
    "ci_low", "ci_high", "forgetting", "backward_transfer", "n_metrics", "mde_pct", "n_items", "base_value",
    "variant_value", *CAPABILITY_VERDICT_COLUMNS,  # the verdict columns: filled in by compare
]


Columns = dict[str, NDArray[Any]]
"""A frame's columns as arrays (numbers as float, texts as objects): what the capability rows read, by position."""

_NUMBERS = ("mde_pct", "forgetting", "backward_transfer", "base_value", "variant_value", "n")


def _columns(frame: pd.DataFrame, value: str) -> Columns:
    cols = {name: frame[name].to_numpy(dtype=float) for name in (value, *_NUMBERS) if name in frame}
    return cols | {name: frame[name].to_numpy(dtype=object) for name in ("task", "metric", "group")}


def _member_mde(cols: Columns, at: NDArray[np.int64]) -> float:
    """A capability's MDE from its scored members' (at `at`; NaN without an mde_pct column)."""
    if "mde_pct" not in cols or not at.size:
        return math.nan
    return combined_mde(cols["mde_pct"][at])


def _member_boot(boot: dict[tuple[str, str, str], NDArray[np.float64]] | None, variant: str, cols: Columns,
                 at: NDArray[np.int64]) -> NDArray[np.float64] | None:
    """Bootstrap samples of a capability: per resample, the mean over its members' drifts."""
    if boot is None or not at.size:
        return None
    keys = [(variant, t, m) for t, m in zip(cols["task"][at], cols["metric"][at], strict=True)]
    stacked = [boot[k] for k in keys if k in boot]
    return _nanmean_rows(stacked) if stacked else None


def _nanmean_rows(stacked: list[NDArray[np.float64]]) -> NDArray[np.float64]:
    """Column-wise mean over rows ignoring NaN; NaN (without a warning) where a column is all NaN."""
    matrix = np.vstack(stacked)
    finite = ~np.isnan(matrix)
    counts = finite.sum(axis=0)
    sums = np.where(finite, matrix, 0.0).sum(axis=0)
    out = np.full(matrix.shape[1], np.nan)
    np.divide(sums, counts, out=out, where=counts > 0)
    return out


def _row(
    variant: str, algorithm: str, level: str, key: str, mean: float, std: float,
    samples: NDArray[np.float64] | None, cols: Columns, at: NDArray[np.int64], n_metrics: int,
) -> dict[str, object]:
    from captrack.analysis.stats import percentile_ci

    low, high = percentile_ci(samples) if samples is not None else (math.nan, math.nan)
    return {
        "variant": variant,
        "algorithm": algorithm,
        "level": level,
        "key": key,
        "mean_rel_drift_pct": mean,
        "std_rel_drift_pct": std,
        "ci_low": low,
        "ci_high": high,
        "forgetting": _nanmean(cols, "forgetting", at),
        "backward_transfer": _nanmean(cols, "backward_transfer", at),
        "n_metrics": n_metrics,
    } | _values(cols, at)


def _values(cols: Columns, at: NDArray[np.int64]) -> dict[str, float]:
    """Paired items (each member task counted once) and the mean base and variant value over the members
    that have both (metrics of different scales are averaged as they are: a summary, not a drift); NaN without."""
    if "base_value" not in cols or "variant_value" not in cols or not at.size:
        return {"n_items": math.nan, "base_value": math.nan, "variant_value": math.nan}
    base, variant = cols["base_value"][at], cols["variant_value"][at]
    both = ~np.isnan(base) & ~np.isnan(variant)
    if not both.any():
        return {"n_items": math.nan, "base_value": math.nan, "variant_value": math.nan}
    n_items = math.nan
    if "n" in cols:  # each member task's items once: its first row's n
        _, first = np.unique(cols["task"][at][both], return_index=True)
        n_items = float(np.nansum(cols["n"][at][both][np.sort(first)]))  # as pandas sums: NaN skipped
    return {"n_items": n_items, "base_value": float(base[both].mean()), "variant_value": float(variant[both].mean())}


def _nanmean(cols: Columns, column: str, at: NDArray[np.int64]) -> float:
    if column not in cols or not at.size:
        return math.nan
    values = cols[column][at]
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else math.nan


def compatible_table(
    drift: pd.DataFrame, taxonomy: Taxonomy, variants: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """CapTrack's published layout: one row per variant, one column per capability (or facet).

    Returns (means, stds), the counterparts of the reference's relative_differences(_std).csv.
    """
    columns = [(cap, facet, label) for cap in taxonomy.capabilities for facet, label in cap.facets.items()]
    rows = drift.groupby(["variant", "capability", "facet"], sort=False, dropna=False).indices if len(drift) else {}
    drifts = drift["rel_drift_pct"].to_numpy(dtype=float) if len(drift) else np.empty(0)
    mean_cells = np.full((len(variants), len(columns)), math.nan)
    std_cells = mean_cells.copy()
    for i, variant in enumerate(variants):
        for j, (cap, facet, _) in enumerate(columns):
            values = drifts[rows.get((variant, cap.key, facet), np.empty(0, dtype=np.int64))]
            values = values[~np.isnan(values)]
            if values.size:
                mean_cells[i, j], std_cells[i, j] = values.mean(), values.std(ddof=0)
    index, labels = pd.Index(list(variants), name="variant"), [c[2] for c in columns]
    means = pd.DataFrame(mean_cells, index=index, columns=labels)
    stds = pd.DataFrame(std_cells, index=index, columns=labels)
    return means, stds
