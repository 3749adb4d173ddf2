"""One variant's share of a comparison: everything `analyse` computes from that variant's pair alone.

Per replicate, task and metric counts; drift and transition rows (before their CIs); answer churn and
all-seeds-agree counts; the pairs table's deltas; cluster labels. A variant's part depends on no other
variant, so captrack.compare.readers computes it where the pair was read (a worker process) and
`analyse` computes it only for a pair that comes without one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.bootstrap import Items
from captrack.analysis.by_field import group_table
from captrack.analysis.churn import answer_churn_counts, churn_warning, seed_agreements
from captrack.analysis.curves import item_means
from captrack.analysis.drift import relative_drift
from captrack.analysis.item_rows import one_row_items
from captrack.analysis.stats import mcnemar_exact
from captrack.analysis.transitions import (
    Transitions,
    chance_weight,
    count_transitions,
    seed_item_outcomes,
    seed_item_tests,
)
from captrack.analysis.types import PairInput, VariantPart
from captrack.analysis.verdict_tables import item_clusters, item_labels
from captrack.errors import UnknownNameError
from captrack.labels import VariantLabels
from captrack.metrics.registry import MetricSpec, get_metric
from captrack.results.pairing import PairedItems

__all__ = ["PAIR_DELTA_COLUMNS", "PartOptions", "merge_parts", "variant_part"]

Seeds = dict[tuple[str, str], tuple[NDArray[np.bool_], NDArray[np.bool_]]]
"""(task, metric) -> the base's and the variant's outcomes, (items, seeds) (transitions.seed_item_outcomes)."""

PAIR_DELTA_COLUMNS = ["variant", "task", "metric", "base_value", "variant_value", "delta", "delta_ci_low", "delta_ci_high"]


@dataclass(frozen=True)
class PartOptions:
    """What of captrack.analysis.comparison.CompareOptions a variant's part depends on."""

    churn: bool = True
    cluster: str | None = None
    pair_deltas: bool = False
    bootstrap: int = 1000
    seed: int = 0


def variant_part(pair: PairInput, options: PartOptions) -> VariantPart:
    """The part of the comparison that `pair` alone determines; its warnings in the order they arise."""
    paired, variant = pair.paired, pair.spec
    warnings: list[str] = []
    per_rep, items = _per_replicate(paired), item_means(paired)
    clusters = item_clusters(paired, pair.fields[options.cluster], options.cluster, warnings) if options.cluster else {}
    sources = item_labels(paired, pair.source_ids) if pair.source_ids is not None else {}
    seeds = seed_item_outcomes(paired.items) if len(paired.replicates) >= 2 else {}
    t_rows, d_rows, counts = _variant_rows(variant, per_rep, items, warnings, seeds)
    _add_noise_floor(t_rows, paired)
    unreadable = _add_flip_decomposition(t_rows, pair, options.churn)
    deltas = None
    # the variant's tracked (task, metric)s: each change with its bootstrap CI (a chunk's always: merge_parts keeps
    # them when any chunk of the variant has transitions, as the whole variant's table would)
    if options.pair_deltas and (t_rows or pair.chunked):
        deltas = group_table(paired.items, variant, n_resamples=options.bootstrap, seed=options.seed)[PAIR_DELTA_COLUMNS]
    return VariantPart(per_replicate=per_rep, items=items, clusters=clusters, transitions=t_rows, drift=d_rows,
                       counts=counts, warnings=_warnings(variant.name, warnings, counts["zero_base"], unreadable),
                       pair_deltas=deltas, sources=sources, row_warnings=warnings, churn_unreadable=unreadable)


def merge_parts(variant: VariantLabels, parts: Sequence[VariantPart]) -> VariantPart:
    """The part of a variant read in chunks (runs of whole tasks, in task order; captrack.compare.pair_reads) from
    its chunks' parts: what `variant_part` gives for the whole variant (tables, counts, warnings and their order)."""
    zero = [task for part in parts for task in part.counts["zero_base"]]
    unreadable = sorted({task for part in parts for task in part.churn_unreadable})
    rows = [warning for part in parts for warning in part.row_warnings]
    transitions = [row for part in parts for row in part.transitions]
    deltas = [part.pair_deltas for part in parts if part.pair_deltas is not None]
    counts = {"paired_items": {k: n for part in parts for k, n in part.counts["paired_items"].items()}, "zero_base": zero}
    return VariantPart(
        per_replicate=pd.concat([part.per_replicate for part in parts], ignore_index=True),
        items={key: values for part in parts for key, values in part.items.items()},
        clusters={key: labels for part in parts for key, labels in part.clusters.items()},
        transitions=transitions, drift=[row for part in parts for row in part.drift], counts=counts,
        warnings=_warnings(variant.name, rows, zero, unreadable),
        pair_deltas=pd.concat(deltas, ignore_index=True) if transitions and deltas else None,
        sources={key: labels for part in parts for key, labels in part.sources.items()},
        row_warnings=rows, churn_unreadable=unreadable)


def _warnings(variant: str, rows: list[str], zero_base: list[str], unreadable: list[str]) -> list[str]:
    """A part's warnings: its (task, metric)s' own, then the one naming base values of 0, then the churn one."""
    zero = [f"{variant}: base value is 0, so relative drift is NaN for: {', '.join(zero_base)}"] if zero_base else []
    return [*rows, *zero, *churn_warning(variant, unreadable)]


def _add_noise_floor(rows: list[dict[str, Any]], paired: PairedItems) -> None:
    """floor_forgetting / floor_backward_transfer: the share of items that go 1→0 / 0→1 between two of the base's
    own replicates (seeds), averaged over every ordered pair of them: what F and BT are without any training.
    NaN where the base has a single replicate."""
    floors: dict[tuple[str, str], tuple[float, float]] = {}
    items = paired.items
    if len(paired.replicates) >= 2 and len(items):
        wide = items.pivot_table(index=["task", "metric", "doc_hash", "occ"], columns="replicate", values="base",
                                 aggfunc="first", observed=True)
        for (task, metric), frame in wide.groupby(level=["task", "metric"], sort=False):
            values = frame.dropna().to_numpy(dtype=float) > 0.5
            pairs = [(a, b) for a in range(values.shape[1]) for b in range(values.shape[1]) if a != b]
            if len(values) and pairs:
                lost = float(np.mean([np.mean(values[:, a] & ~values[:, b]) for a, b in pairs]))
                floors[(str(task), str(metric))] = (lost, lost)  # over ordered pairs, 1→0 and 0→1 shares are equal
    for row in rows:
        row["floor_forgetting"], row["floor_backward_transfer"] = floors.get(
            (str(row["task"]), str(row["metric"])), (math.nan, math.nan))


def _add_flip_decomposition(rows: list[dict[str, Any]], pair: PairInput, churn: bool) -> list[str]:
    """Answer churn and all-seeds-agree transition counts on each transition row (captrack.analysis.churn); returns
    the tasks whose answers could not be read."""
    paired = pair.paired
    counts, unreadable = answer_churn_counts(paired, pair.churn_answers) if (
        churn and rows and pair.churn_answers is not None) else ({}, [])
    agree = seed_agreements(paired, {(str(r["task"]), str(r["metric"])): bool(r["direction_lower"]) for r in rows})
    for row in rows:
        row["n_replicates"], row["n_10_all_seeds"], row["n_01_all_seeds"] = agree.get(
            (str(row["task"]), str(row["metric"])), (0, 0, 0))
        row["answer_churn"] = counts.get((row["task"], row["metric"]), math.nan)
    return unreadable


def _per_replicate(paired: PairedItems) -> pd.DataFrame:
    """Per replicate, task and metric: n, means, transition counts, whether binary, k (the modal option count),
    the range of the items' k and the chance weight mean_i 1/(k_i − 1) (captrack.analysis.transitions.chance_weight)."""
    rows = []
    items = paired.items
    all_base, all_variant = items["base"].to_numpy(dtype=float), items["variant"].to_numpy(dtype=float)
    all_ks = items["n_choices"].to_numpy(dtype=float)
    groups = _one_seed_groups(items)
    if groups is None:
        groups = items.groupby(["task", "metric", "replicate"], sort=True).indices  # positions of each group's rows
    for task, metric, replicate in sorted(groups):
        at = groups[(task, metric, replicate)]
        base, variant, ks = all_base[at], all_variant[at], all_ks[at]
        t = count_transitions(base, variant)
        known = ks[~np.isnan(ks)]
        values, counts = np.unique(known, return_counts=True)  # the mode: the smallest of the most frequent k
        rows.append({
            "replicate": replicate, "task": task, "metric": metric, "n": t.n, "base_value": base.mean(),
            "variant_value": variant.mean(), "n_11": t.n_11, "n_10": t.n_10, "n_01": t.n_01, "n_00": t.n_00,
            "is_binary": bool(np.isin(base, (0.0, 1.0)).all() and np.isin(variant, (0.0, 1.0)).all()),
            "k": float(values[counts.argmax()]) if known.size else math.nan,
            "k_min": float(np.nanmin(ks)) if known.size else math.nan,
            "k_max": float(np.nanmax(ks)) if known.size else math.nan, "chance_weight": chance_weight(ks),
        })
    columns = ["replicate", "task", "metric", "n", "base_value", "variant_value", "n_11", "n_10", "n_01", "n_00", "is_binary", "k",
               "k_min", "k_max", "chance_weight"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["rel_drift_pct"] = [relative_drift(b, v) for b, v in zip(frame["base_value"], frame["variant_value"], strict=True)]
    frame["forgetting"] = frame["n_10"] / frame["n"]
    frame["backward_transfer"] = frame["n_01"] / frame["n"]
    return frame


def _one_seed_groups(items: pd.DataFrame) -> dict[tuple[str, str, int], NDArray[np.intp]] | None:
    """The row positions of each (task, metric, replicate) when every item is one row of one seed (the group-by's
    keys and positions, from captrack.analysis.item_rows); None otherwise."""
    one_row = one_row_items(items)
    seeds = items["replicate"].to_numpy()
    if one_row is None or not (seeds == seeds[0]).all():
        return None
    seed = int(seeds[0])
    return {(task, metric, seed): np.arange(rows.start, rows.stop) for (task, metric), rows in one_row.runs.items()}


def _spec(metric: str, warnings: list[str]) -> MetricSpec | None:
    try:
        return get_metric(metric)
    except UnknownNameError:
        warnings.append(
            f"metric {metric!r} is not declared in captrack.metrics; its drift is reported as "
            "higher-is-better (declare a MetricSpec to set its direction)"
        )
        return None


def _variant_rows(
    variant: VariantLabels, per_rep: pd.DataFrame, items: Items, warnings: list[str], seeds: Seeds
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Transition and drift rows of one variant (drift CIs are filled in later; `seeds`: seed_item_outcomes)."""
    transitions, drift = [], []
    paired_items: dict[str, int] = {}
    zero_base: list[str] = []
    empty = (np.empty(0), np.empty(0))
    columns = {name: per_rep[name].to_numpy() for name in per_rep.columns}
    groups = per_rep.groupby(["task", "metric"], sort=True).indices  # positions of each (task, metric)'s replicates
    for task, metric in sorted(groups):
        rows = {name: values[groups[(task, metric)]] for name, values in columns.items()}
        spec = _spec(str(metric), warnings)
        base_arr, var_arr = items.get((variant.name, str(task), str(metric)), empty)
        base_value = float(base_arr.mean()) if base_arr.size else math.nan
        variant_value = float(var_arr.mean()) if var_arr.size else math.nan
        if base_value == 0:
            zero_base.append(f"{task}/{metric}")
        paired_items[f"{task}/{metric}"] = int(base_arr.size)
        drift.append({
            "variant": variant.name, "algorithm": variant.algorithm, "task": task, "metric": metric,
            "direction_spec": spec.direction if spec else "higher", "base_value": base_value,
            "variant_value": variant_value, "rel_drift_pct": relative_drift(base_value, variant_value),
        })
        binary = bool(np.all(rows["is_binary"]))
        if (spec.tracks_transitions if spec else binary) and binary:
            transitions.append(_transition_row(variant, str(task), str(metric), rows, spec,
                                               seeds.get((str(task), str(metric)))))
            low, high = _known(rows["k_min"]).min(initial=math.inf), _known(rows["k_max"]).max(initial=-math.inf)
            if transitions[-1]["k"] is not None and low != high:
                warnings.append(f"{variant.name}: {task}/{metric}: items have {low:.0f} to "
                                f"{high:.0f} options; k reports the most common, E uses each item's own k")
    return transitions, drift, {"paired_items": paired_items, "zero_base": zero_base}


def _known(values: NDArray[Any]) -> NDArray[np.float64]:
    """The numbers of `values` that are not NaN (None counts as NaN)."""
    numbers = np.asarray(values, dtype=float)
    return numbers[~np.isnan(numbers)]


def _transition_row(variant: VariantLabels, task: str, metric: str, rows: Mapping[str, NDArray[Any]],
                    spec: MetricSpec | None, seeds: tuple[NDArray[np.bool_], NDArray[np.bool_]] | None = None
                    ) -> dict[str, Any]:
    """One (task, metric)'s transition row from its replicates' counts (`rows`: per_replicate's columns); with
    several seeds, mcnemar_p and the excess CIs on item means (transitions.seed_item_tests: items, not pairs)."""
    n11, n10, n01, n00 = (int(np.asarray(rows[c]).sum()) for c in ("n_11", "n_10", "n_01", "n_00"))
    if spec is not None and spec.direction == "lower":  # 1 is the bad outcome: flip
        n11, n10, n01, n00 = n00, n01, n10, n11
    k_values = _known(rows["k"])
    k = int(k_values[0]) if len(k_values) and (spec is None or spec.chance_from_choices) else None
    # Items with different k: E is the mean of the per-item expectations (weight = mean_i 1/(k_i − 1)).
    weight = None
    if k is not None:
        n = np.asarray(rows["n"])
        weight = float(np.nansum(np.asarray(rows["chance_weight"], dtype=float) * n) / n.sum())
    t = Transitions(n11, n10, n01, n00, k=k, weight=weight)
    forgetting_excess, backward_excess = t.forgetting_excess, t.backward_transfer_excess
    row = {
        "variant": variant.name, "algorithm": variant.algorithm, "task": task, "metric": metric,
        "n": t.n, "n_11": n11, "n_10": n10, "n_01": n01, "n_00": n00,
        "forgetting": t.forgetting, "backward_transfer": t.backward_transfer, "k": k,
        "forgetting_adj": t.forgetting_adj, "backward_transfer_adj": t.backward_transfer_adj,
        "forgetting_excess": forgetting_excess[0], "forgetting_excess_ci_low": forgetting_excess[1],
        "forgetting_excess_ci_high": forgetting_excess[2], "backward_transfer_excess": backward_excess[0],
        "backward_transfer_excess_ci_low": backward_excess[1], "backward_transfer_excess_ci_high": backward_excess[2],
        "mcnemar_p": mcnemar_exact(n10, n01), "direction_lower": spec is not None and spec.direction == "lower",
    }
    if seeds is not None:
        lower = spec is not None and spec.direction == "lower"  # 1 is the bad outcome: the good one is ≤ 0.5
        before, after = (~side if lower else side for side in seeds)
        row |= seed_item_tests(before, after, t.chance_weight_value)
    return row
