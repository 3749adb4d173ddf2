"""Drift over training: every step of a trajectory paired with the base, as one table of curves.

A *trajectory* is a variant evaluated at several training steps; each step's items are paired with the
base's exactly as an end point's are (captrack.results.pairing), and this module turns the paired items
into ``curves.csv``: one row per (variant, algorithm, step, level, key, metric) with the same numbers an
end-point comparison reports (drift with its CI, F, BT and their chance-adjusted forms, and each row's change,
CI, verdict and the verdict's p-value). Per capability, captrack.analysis.curve_stats adds the first significant step, a trend with a paired
bootstrap CI and item churn. Pure functions on paired items: nothing here reads the store.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.bootstrap import Items, bootstrap_drift, drift_ci
from captrack.analysis.curve_stats import (
    CHURN_ITEM_COLUMNS,
    STEP_FLIP_COLUMNS,
    SUMMARY_COLUMNS,
    capability_summary,
    item_churn,
    step_flips,
)
from captrack.analysis.curve_windows import trajectory_members
from captrack.analysis.drift import aggregate_capabilities, relative_drift, with_membership
from captrack.analysis.item_rows import one_row_items, pandas_mean
from captrack.analysis.power import power_table
from captrack.analysis.transitions import Transitions, chance_weight, count_transitions
from captrack.analysis.verdict_tables import (
    Clusters,
    capability_verdicts,
    drift_verdicts,
    item_labels,
)
from captrack.analysis.verdicts import DEFAULT_MARGIN
from captrack.errors import UnknownNameError
from captrack.labels import VariantLabels
from captrack.metrics.registry import MetricSpec, get_metric
from captrack.results.pairing import PairedItems
from captrack.taxonomy import Taxonomy

__all__ = ["CURVE_COLUMNS", "Curves", "Trajectory", "curve_tables", "item_means"]

CURVE_COLUMNS = [
    "variant", "algorithm", "step", "level", "key", "metric", "n_items", "base_value", "value", "drift_pct",
    "ci_low", "ci_high", "forgetting", "backward_transfer", "forgetting_adj", "backward_transfer_adj", "mde_pct",
    "oriented_change", "change_ci_low", "change_ci_high", "verdict", "p_value",
]
_RATES = ("forgetting", "backward_transfer", "forgetting_adj", "backward_transfer_adj")


@dataclass(frozen=True)
class Trajectory:
    """One variant's paired items at each training step (step -> items paired with the base)."""

    labels: VariantLabels
    steps: Mapping[int, PairedItems]
    clusters: Mapping[int, Clusters] = field(default_factory=dict)  # step -> --cluster labels (curve_labels)
    sources: Mapping[int, Clusters] = field(default_factory=dict)  # step -> source ids of shared-item tasks

    @property
    def variant(self) -> str:
        """The variant's name."""
        return self.labels.name


@dataclass
class Curves:
    """What curve_tables computed: the curves, the per-capability summary, the items that flip-flopped and the
    items that flipped at each step."""

    curves: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CURVE_COLUMNS))
    summary: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=SUMMARY_COLUMNS))
    churn_items: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CHURN_ITEM_COLUMNS))
    step_flips: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=STEP_FLIP_COLUMNS))


def curve_tables(trajectories: Sequence[Trajectory], taxonomy: Taxonomy, n_resamples: int = 1000, seed: int = 0,
                 level: float = 0.95, margin: float = DEFAULT_MARGIN) -> Curves:
    """Curves, capability summary and item churn of every trajectory (bootstrap as `captrack compare`'s).

    Items are resampled per task with the same draws at every step (they depend on seed, task and the
    number of items only, or on the clusters with `--cluster`), so a trend's CI is a paired bootstrap over items
    across steps. Each step's verdicts use the trajectory's clusters and source ids as capabilities.csv does, so
    the last step's rows are the end point's.
    """
    frames: list[pd.DataFrame] = []
    summaries: list[pd.DataFrame] = []
    churns: list[pd.DataFrame] = []
    flips: list[pd.DataFrame] = []
    for trajectory in trajectories:
        per_step: dict[int, pd.DataFrame] = {}
        boots: dict[int, dict[tuple[str, str, str], NDArray[np.float64]]] = {}
        means: dict[int, Items] = {}
        identities: dict[int, Clusters] = {}
        for step, paired in sorted(trajectory.steps.items()):
            means[step] = item_means(paired)
            identities[step] = item_labels(paired, paired.items["doc_hash"].astype(str) + "\x1f"
                                           + paired.items["occ"].astype(str))
            clusters = trajectory.clusters.get(step) or None
            boots[step] = bootstrap_drift(means[step], n_resamples, seed, clusters)
            per_step[step] = _step_rows(trajectory, step, paired, means[step], boots[step], taxonomy, level, margin)
        frames += per_step.values()
        binary, lower = _binary_items(trajectory, per_step), _lower_is_better(means)
        churn = item_churn(trajectory.variant, trajectory.labels.algorithm, binary, lower)
        flips.append(step_flips(trajectory.variant, trajectory.labels.algorithm, binary, lower, taxonomy))
        windows = trajectory_members(trajectory.variant, means, identities, trajectory.clusters, trajectory.sources,
                                     taxonomy)
        summaries.append(capability_summary(trajectory.variant, trajectory.labels.algorithm, per_step, boots, churn, taxonomy,
                                            level, windows))
        churns.append(churn)
    curves = pd.concat(frames, ignore_index=True)[CURVE_COLUMNS] if frames else pd.DataFrame(columns=CURVE_COLUMNS)
    summary = pd.concat(summaries, ignore_index=True) if summaries else pd.DataFrame(columns=SUMMARY_COLUMNS)
    churn = pd.concat(churns, ignore_index=True) if churns else pd.DataFrame(columns=CHURN_ITEM_COLUMNS)
    flipped = pd.concat(flips, ignore_index=True) if flips else pd.DataFrame(columns=STEP_FLIP_COLUMNS)
    return Curves(curves, summary[SUMMARY_COLUMNS], churn[CHURN_ITEM_COLUMNS], flipped[STEP_FLIP_COLUMNS])


def item_means(paired: PairedItems) -> Items:
    """Per (variant, task, metric): base and variant values per item (doc_hash, occurrence order), averaged over
    the replicates every item has: the items the bootstrap resamples."""
    n_replicates = len(paired.replicates)
    one_row = one_row_items(paired.items) if n_replicates == 1 else None
    if one_row is not None:  # each item its row, in order: its mean is its value
        base, variant = (pandas_mean(paired.items[side].to_numpy(dtype=float)) for side in ("base", "variant"))
        return {(paired.variant, task, metric): (base[rows], variant[rows]) for (task, metric), rows in one_row.runs.items()}
    grouped = paired.items.groupby(["task", "metric", "doc_hash", "occ"], sort=True)[["base", "variant"]]
    means = grouped.mean()[grouped.size() == n_replicates]
    out: Items = {}
    for (task, metric), frame in means.groupby(level=["task", "metric"], sort=True):
        out[(paired.variant, str(task), str(metric))] = (
            frame["base"].to_numpy(dtype=float), frame["variant"].to_numpy(dtype=float))
    return out


def _direction(metric: str) -> str:
    spec = _spec(metric)
    return spec.direction if spec is not None else "higher"


def _spec(metric: str) -> MetricSpec | None:
    try:
        return get_metric(metric)
    except UnknownNameError:  # compare's warnings already name undeclared metrics
        return None


def _binary_items(trajectory: Trajectory, per_step: Mapping[int, pd.DataFrame]) -> dict[int, pd.DataFrame]:
    """Per step, the paired items of the (task, metric)s with transitions (binary, tracked) at every step."""
    tracked = None
    for rows in per_step.values():
        task_rows = rows[(rows["level"] == "task") & rows["forgetting"].notna()]
        keys = set(zip(task_rows["key"], task_rows["metric"], strict=True))
        tracked = keys if tracked is None else tracked & keys
    out = {}
    for step, paired in trajectory.steps.items():
        items = paired.items
        pick = [(t, m) in (tracked or set()) for t, m in zip(items["task"], items["metric"], strict=True)]
        out[step] = items[pick]
    return out


def _lower_is_better(means: Mapping[int, Items]) -> dict[tuple[str, str], bool]:
    keys = {(t, m) for items in means.values() for _, t, m in items}
    return {(t, m): (spec := _spec(m)) is not None and spec.direction == "lower" for t, m in keys}


def _step_rows(trajectory: Trajectory, step: int, paired: PairedItems, items: Items,
               boot: Mapping[tuple[str, str, str], NDArray[np.float64]], taxonomy: Taxonomy, level: float,
               margin: float) -> pd.DataFrame:
    """Task, capability and group rows of one step, each with its verdict (as drift.csv's and capabilities.csv's:
    the same change, CI and rule, so a step is significant in one sense only)."""
    clusters, sources = trajectory.clusters.get(step) or None, trajectory.sources.get(step) or None
    tasks = [_task_row(trajectory, task, metric, frame, items, boot, level, clusters)
             for (task, metric), frame in paired.items.groupby(["task", "metric"], sort=True)]
    task_frame = pd.DataFrame(tasks)
    power = power_table(items)[["task", "metric", "mde_pct"]]
    task_frame = task_frame.merge(power, on=["task", "metric"], how="left")
    member = with_membership(task_frame.rename(columns={"value": "variant_value", "drift_pct": "rel_drift_pct",
                                                        "n_items": "n"}), taxonomy)
    member["direction"] = member["direction"].fillna(member["metric"].map(lambda m: _direction(str(m))))
    task_frame = drift_verdicts(task_frame.assign(direction=task_frame["metric"].map(lambda m: _direction(str(m)))),
                                items, margin, clusters)
    drifts = capability_verdicts(aggregate_capabilities(member, taxonomy, boot=dict(boot)), member, items, taxonomy, margin,
                                 clusters, sources)
    adjusted = aggregate_capabilities(member.assign(forgetting=member["forgetting_adj"],
                                                    backward_transfer=member["backward_transfer_adj"]), taxonomy)
    measured = drifts["n_items"].notna().to_numpy()  # capabilities and groups with paired items at this step
    drifts, adjusted = drifts[measured], adjusted[measured]
    levels = drifts.assign(
        step=step, metric="", drift_pct=drifts["mean_rel_drift_pct"], value=drifts["variant_value"],
        forgetting_adj=adjusted["forgetting"].to_numpy(), backward_transfer_adj=adjusted["backward_transfer"].to_numpy())
    task_frame = task_frame.assign(step=step, level="task", key=task_frame["task"])
    return pd.concat([task_frame[CURVE_COLUMNS], levels[CURVE_COLUMNS]], ignore_index=True)


def _task_row(trajectory: Trajectory, task: str, metric: str, frame: pd.DataFrame, items: Items,
              boot: Mapping[tuple[str, str, str], NDArray[np.float64]], level: float,
              clusters: Clusters | None) -> dict[str, object]:
    """One (task, metric) at one step: values over item means, transitions summed over replicates (as compare)."""
    key = (trajectory.variant, task, metric)
    base, variant = items.get(key, (np.empty(0), np.empty(0)))
    base_value = float(base.mean()) if base.size else math.nan
    value = float(variant.mean()) if variant.size else math.nan
    low, high, _ = drift_ci(base, variant, boot.get(key), level,  # as drift.csv's (compare warns of a withheld CI)
                            bool(clusters and key in clusters))
    row: dict[str, object] = {
        "variant": trajectory.variant, "algorithm": trajectory.labels.algorithm, "task": task, "metric": metric,
        "n_items": int(base.size), "base_value": base_value, "value": value,
        "drift_pct": relative_drift(base_value, value), "ci_low": low, "ci_high": high,
    } | dict.fromkeys(_RATES, math.nan)
    t = _transitions(frame, _spec(metric))
    if t is not None:
        row |= {"forgetting": t.forgetting, "backward_transfer": t.backward_transfer,
                "forgetting_adj": t.forgetting_adj, "backward_transfer_adj": t.backward_transfer_adj}
    return row


def _transitions(frame: pd.DataFrame, spec: MetricSpec | None) -> Transitions | None:
    """Transition counts of a binary metric summed over replicates, oriented (1 is good), with the chance weight
    of the items' option counts; None for a metric that is not binary or tracks no transitions."""
    base, variant = frame["base"].to_numpy(dtype=float), frame["variant"].to_numpy(dtype=float)
    binary = bool(np.isin(base, (0.0, 1.0)).all() and np.isin(variant, (0.0, 1.0)).all())
    if not binary or not (spec.tracks_transitions if spec else True):
        return None
    counts = [count_transitions(f["base"].to_numpy(dtype=float), f["variant"].to_numpy(dtype=float))
              for _, f in frame.groupby("replicate", sort=True)]
    n11, n10, n01, n00 = (sum(getattr(c, name) for c in counts) for name in ("n_11", "n_10", "n_01", "n_00"))
    if spec is not None and spec.direction == "lower":  # 1 is the bad outcome: flip
        n11, n10, n01, n00 = n00, n01, n10, n11
    modes = frame["n_choices"].dropna().mode()
    k = int(modes.iloc[0]) if len(modes) and (spec is None or spec.chance_from_choices) else None
    weights = [(chance_weight(f["n_choices"].to_numpy(dtype=float)), len(f)) for _, f in frame.groupby("replicate", sort=True)]
    weight = sum(w * n for w, n in weights) / sum(n for _, n in weights) if k is not None else None
    return Transitions(n11, n10, n01, n00, k=k, weight=weight)
