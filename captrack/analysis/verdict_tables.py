"""Verdict columns of drift.csv and capabilities.csv (rules and CI method: captrack.analysis.verdicts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from captrack.analysis.bootstrap import Items
from captrack.analysis.drift import oriented_drift
from captrack.analysis.item_rows import one_row_items
from captrack.analysis.verdicts import (
    CAPABILITY_VERDICT_COLUMNS,
    DRIFT_VERDICT_COLUMNS,
    Change,
    combine_changes,
    paired_change,
)
from captrack.errors import InputError, UnknownNameError
from captrack.metrics.registry import get_metric
from captrack.taxonomy import Taxonomy

if TYPE_CHECKING:
    from captrack.results.pairing import PairedItems

__all__ = ["MIN_CLUSTERS", "Clusters", "capability_verdicts", "drift_verdicts", "item_clusters", "item_labels",
           "metric_kind"]

MIN_CLUSTERS = 20
"""Below this many clusters a task's cluster-robust interval comes with a warning."""

# (variant, task, metric) -> the cluster label of each paired item, in the order of Items' arrays.
Clusters = dict[tuple[str, str, str], Sequence[object]]



def metric_kind(metric: str, base: np.ndarray) -> str:
    """The MetricSpec kind of `metric`; undeclared metrics: binary/score when every value is in [0, 1]."""
    try:
        return get_metric(metric).kind
    except UnknownNameError:
        return "score" if base.size and float(np.nanmin(base)) >= 0 and float(np.nanmax(base)) <= 1 else "count"


def _columns(change: Change) -> dict[str, object]:
    return {"oriented_change": change.delta, "change_ci_low": change.ci95[0], "change_ci_high": change.ci95[1],
            "change_ci90_low": change.ci90[0], "change_ci90_high": change.ci90[1], "verdict": change.verdict,
            "p_value": change.p_value, "change_method": change.method}


def drift_verdicts(drift: pd.DataFrame, items: Items, margin: float, clusters: Clusters | None = None) -> pd.DataFrame:
    """`drift` with the oriented change per (variant, task, metric), its 95%/90% CIs and verdict appended."""
    rows = []
    empty = (np.empty(0), np.empty(0))
    for variant, task, metric, direction in zip(drift["variant"], drift["task"], drift["metric"], drift["direction"],
                                                strict=True):
        key = (str(variant), str(task), str(metric))
        base, var = items.get(key, empty)
        kind = metric_kind(str(metric), base)
        change = paired_change(base, var, kind, str(direction), margin, (clusters or {}).get(key))
        rows.append({"change_unit": "% of base" if kind == "count" else "points"} | _columns(change))
    extra = pd.DataFrame(rows, columns=DRIFT_VERDICT_COLUMNS, index=drift.index)
    return pd.concat([drift, extra], axis=1)


def capability_verdicts(capabilities: pd.DataFrame, drift: pd.DataFrame, items: Items, taxonomy: Taxonomy,
                        margin: float, clusters: Clusters | None = None, sources: Clusters | None = None) -> pd.DataFrame:
    """`capabilities` with each row's oriented mean drift, its own paired change, CIs and verdict.

    A capability's change is the mean of its members' oriented changes; a group's, the mean over the
    member metrics of all its capabilities (captrack.analysis.verdicts.combine_changes). oriented_drift_pct
    is the mean of the members' oriented drift (NaN where every member is neutral: no better side).
    """
    cap_group = {c.key: g.key for g in taxonomy.groups for c in g.capabilities}
    rows = []
    empty = (np.empty(0), np.empty(0))
    groups = drift.assign(_group=drift["capability"].map(lambda c: cap_group.get(str(c), "")))
    # Each (variant, capability or group)'s members, each (task, metric) once, in drift order: as columns + positions.
    by_cap, by_group = (_members(groups.drop_duplicates(["variant", level, "task", "metric"]), level)
                        for level in ("capability", "_group"))
    none: tuple[dict[str, list[Any]], list[int]] = ({"task": [], "metric": [], "direction": [], "rel_drift_pct": []}, [])
    for variant, level, key in zip(capabilities["variant"], capabilities["level"], capabilities["key"], strict=True):
        columns, at = (by_cap if level == "capability" else by_group).get((variant, key), none)
        members = {name: [column[i] for i in at] for name, column in columns.items()}
        spec = []
        task_clusters: dict[str, Sequence[object]] = {}
        task_sources: dict[str, Sequence[object]] = {}
        for task, metric, direction in zip(members["task"], members["metric"], members["direction"], strict=True):
            ikey = (str(variant), str(task), str(metric))
            base, var = items.get(ikey, empty)
            spec.append((str(task), base, var, metric_kind(str(metric), base), str(direction)))
            if clusters and ikey in clusters:
                task_clusters[str(task)] = clusters[ikey]
            if sources and ikey in sources:
                task_sources[str(task)] = sources[ikey]
        change = combine_changes(spec, margin, task_clusters or None, task_sources or None)
        oriented = [oriented_drift(r, d) for r, d in zip(members["rel_drift_pct"], members["direction"], strict=True)
                    if d != "neutral" and not math.isnan(r)]
        rows.append({"oriented_drift_pct": float(np.mean(oriented)) if oriented else math.nan} | _columns(change))
    extra = pd.DataFrame(rows, columns=CAPABILITY_VERDICT_COLUMNS, index=capabilities.index)
    out = pd.concat([capabilities, extra], axis=1)
    caps = out[out["level"] == "capability"]
    of_group = caps.groupby([caps["variant"], caps["key"].map(lambda c: cap_group.get(str(c)))], sort=False).indices
    oriented_caps = caps["oriented_drift_pct"].to_numpy(dtype=float)
    for index in out.index[out["level"] == "group"]:  # a group's colour: the mean over its capabilities
        values = oriented_caps[of_group.get((out.at[index, "variant"], out.at[index, "key"]), np.empty(0, dtype=np.int64))]
        values = values[~np.isnan(values)]
        out.at[index, "oriented_drift_pct"] = float(values.mean()) if len(values) else math.nan
    return out


def _members(rows: pd.DataFrame, level: str) -> dict[tuple[Any, Any], tuple[dict[str, list[Any]], list[int]]]:
    """(variant, `level` value) -> the columns capability_verdicts reads of `rows` and the positions of its rows."""
    columns = {name: rows[name].tolist() for name in ("task", "metric", "direction", "rel_drift_pct")}
    return {key: (columns, list(at)) for key, at in rows.groupby(["variant", level], sort=False).indices.items()}


def item_labels(paired: PairedItems, values: pd.Series) -> Clusters:
    """Each paired item's value of a doc field (`values`: per row of ``paired.items``), aligned with
    captrack.analysis.comparison's Items; an item without it gets a label of its own."""
    one_row = one_row_items(paired.items) if len(paired.replicates) == 1 and values.index.equals(paired.items.index) else None
    if one_row is not None:  # each item its row, in order: its label is its row's
        labels = [_label_text(v) for v in values.astype(object).tolist()]
        hashes, occs = paired.items["doc_hash"].to_numpy(dtype=object), paired.items["occ"].to_numpy()
        labels = [f"\x1f{hashes[i]}\x1f{occs[i]}" if label is None else label for i, label in enumerate(labels)]
        return {(paired.variant, task, metric): labels[rows] for (task, metric), rows in one_row.runs.items()}
    frame = paired.items.assign(_label=values.astype(object))
    own = "\x1f" + frame["doc_hash"].astype(str) + "\x1f" + frame["occ"].astype(str)
    frame["_label"] = frame["_label"].map(_label_text).fillna(own)
    grouped = frame.groupby(["task", "metric", "doc_hash", "occ"], sort=True)
    labels = grouped["_label"].first()[grouped.size() == len(paired.replicates)]
    return {(paired.variant, str(task), str(metric)): list(series.to_numpy())
            for (task, metric), series in labels.groupby(level=["task", "metric"], sort=True)}


def _label_text(value: Any) -> str | None:
    """A doc field's value as an item label; None where the item has none (None or NaN)."""
    return None if value is None or value != value else str(value)


def item_clusters(paired: PairedItems, values: pd.Series, field: str, warnings: list[str]) -> Clusters:
    """Cluster labels (`values`: doc field `field` per row of ``paired.items``) of each paired item, aligned
    with captrack.analysis.comparison's Items.

    An item without the field is a cluster of its own (and a warning names the tasks).

    Raises:
        InputError: a (task, metric) has fewer than 2 clusters.
    """
    missing = sorted(set(paired.items.loc[values.isna(), "task"]))
    if missing:
        warnings.append(f"{paired.variant}: items without doc field {field!r} are clusters of one in --cluster "
                        f"(tasks {', '.join(missing)})")
    out: Clusters = {}
    few: list[str] = []
    for key, labels in item_labels(paired, values).items():
        groups = len(set(labels))
        if groups < 2:
            raise InputError(f"--cluster {field}: {key[1]}/{key[2]} has {groups} distinct value(s) of {field!r} among its "
                             f"{len(labels)} items; a cluster-robust interval needs at least 2 clusters (and about "
                             "20 to be reliable): choose a field with more values, or drop --cluster")
        if groups < MIN_CLUSTERS:
            few.append(f"{key[1]}/{key[2]} ({groups})")
        out[key] = labels
    if few:
        warnings.append(f"{paired.variant}: --cluster {field}: fewer than {MIN_CLUSTERS} clusters in "
                        f"{', '.join(few)}: their intervals use t(G − 1) quantiles and are never narrower than without "
                        "clusters, but few clusters make any cluster-robust interval approximate (Cameron & Miller 2015)")
    return out
