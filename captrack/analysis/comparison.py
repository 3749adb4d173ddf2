"""`captrack compare`: transitions, drift, bootstrap CIs and capability aggregates for variants."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from captrack.analysis.algorithm_interval import capability_samples
from captrack.analysis.bootstrap import Items, bootstrap_drift, drift_ci, shared_resamples
from captrack.analysis.by_field import field_table, join_field_tables
from captrack.analysis.churn import CHURN_COLUMNS
from captrack.analysis.contrasts import MEASURE_COLUMNS, item_contrasts
from captrack.analysis.curve_labels import step_labels
from captrack.analysis.curves import Curves, Trajectory, curve_tables
from captrack.analysis.distribution import (
    KEYS,
    CalibrationGroup,
    aggregate_by_algorithm,
    calibration_inputs,
    calibration_table,
    diagnose,
)
from captrack.analysis.drift import (
    aggregate_capabilities,
    compatible_table,
    oriented_drift,
    with_membership,
)
from captrack.analysis.item_spool import DistributionItems
from captrack.analysis.power import POWER_COLUMNS, power_table
from captrack.analysis.ranking import CONTRAST_COLUMNS, algorithm_contrasts
from captrack.analysis.stats import bh_qvalues
from captrack.analysis.types import CompareInput, PairInput
from captrack.analysis.variant_chunks import VariantChunks
from captrack.analysis.variant_part import PAIR_DELTA_COLUMNS, PartOptions, variant_part
from captrack.analysis.verdict_tables import (
    Clusters,
    capability_verdicts,
    drift_verdicts,
)
from captrack.analysis.verdicts import DEFAULT_MARGIN, DRIFT_VERDICT_COLUMNS
from captrack.labels import VariantLabels
from captrack.results.pairing import PairedItems
from captrack.results.samples import ItemText
from captrack.taxonomy import Taxonomy, load_taxonomy

__all__ = [
    "DRIFT_COLUMNS",
    "PAIR_DELTA_COLUMNS",
    "TRANSITION_COLUMNS",
    "CompareOptions",
    "Comparison",
    "analyse",
    "part_options",
]

TRANSITION_COLUMNS = [
    "variant", "algorithm", "task", "metric", "capability", "group", "n", "n_11", "n_10", "n_01",
    "n_00", "forgetting", "backward_transfer", "k", "forgetting_adj", "backward_transfer_adj",
    "mcnemar_p", "p_value", "q_value", "forgetting_excess", "forgetting_excess_ci_low", "forgetting_excess_ci_high",
    "backward_transfer_excess", "backward_transfer_excess_ci_low", "backward_transfer_excess_ci_high",
    "floor_forgetting", "floor_backward_transfer", *CHURN_COLUMNS,
]
DRIFT_COLUMNS = [
    "variant", "algorithm", "task", "metric", "capability", "group", "direction", "base_value",
    "variant_value", "rel_drift_pct", "oriented_drift_pct", "ci_low", "ci_high", *DRIFT_VERDICT_COLUMNS,
]
REPLICATE_COLUMNS = [
    "variant", "replicate", "task", "metric", "n", "base_value", "variant_value", "rel_drift_pct",
    "forgetting", "backward_transfer",
]


@dataclass(frozen=True)
class CompareOptions:
    """Knobs of a comparison."""

    bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95
    allow_partial: bool = False
    distribution: bool = True  # per-choice diagnostics for multiple-choice tasks (reads samples files)
    by: tuple[str, ...] = ()  # doc fields to break transitions and drift down by (reads samples files)
    margin: float = DEFAULT_MARGIN  # equivalence margin of the verdicts (points; % of base for count metrics)
    cluster: str | None = None  # doc field whose values are clusters of non-independent items (reads samples files)
    churn: bool = True  # answer churn per task (reads samples files)
    pair_deltas: bool = False  # each tracked (task, metric)'s change with its bootstrap CI (leaderboards' pairs.csv)
    assume_discordance: float | None = None  # power.csv: also plan MDEs at this share of items flipping either way
    drill_limit: int = 0  # read the texts of up to this many flipped items per (variant, task, metric) (drill-down pages)


@dataclass
class Comparison:
    """Everything `compare` computed, as tables (written out by captrack.report.writer)."""

    base: str
    variants: list[VariantLabels]
    transitions: pd.DataFrame
    drift: pd.DataFrame
    capabilities: pd.DataFrame
    replicates: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    counts: dict[str, Any] = field(default_factory=dict)
    replicate_spread: dict[str, dict[str, float]] = field(default_factory=dict)
    distribution_items: DistributionItems = field(default_factory=DistributionItems)  # on disk: read with frames()
    distribution: pd.DataFrame = field(default_factory=pd.DataFrame)
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)
    judged: dict[str, Any] = field(default_factory=dict)  # model -> task -> metric -> judge, n, nan, reasons
    paired: dict[str, PairedItems] = field(default_factory=dict)  # variant -> its paired items (only with drill_limit: drill-down pages)
    power: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=POWER_COLUMNS))  # MDE per (variant, task, metric)
    contrasts: pd.DataFrame = field(  # algorithm vs algorithm
        default_factory=lambda: pd.DataFrame(columns=[*CONTRAST_COLUMNS, *MEASURE_COLUMNS]))
    aggregate_only: bool = False  # scores without items: no CIs, transitions or MDE can be computed
    by_field: dict[str, pd.DataFrame] = field(default_factory=dict)  # doc field -> analysis.by_field.group_table rows
    setting_differences: list[str] = field(default_factory=list)  # also in warnings; `compare --strict` refuses them
    margin: float = DEFAULT_MARGIN  # the equivalence margin the verdicts used
    output_types: dict[str, str] = field(default_factory=dict)  # task -> lm-eval output type (the base's samples files)
    pair_deltas: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_DELTA_COLUMNS))
    item_texts: dict[tuple[str, str], dict[int, ItemText]] = field(default_factory=dict)  # (run id, task) -> doc_id -> texts
    texts_unavailable: list[str] = field(default_factory=list)  # why some item texts could not be read
    curves: Curves | None = None  # variants evaluated at training steps (trajectories): drift over training
    compatible: tuple[pd.DataFrame, pd.DataFrame] = field(  # CapTrack's published layout: (means, stds) per variant
        default_factory=lambda: (pd.DataFrame(), pd.DataFrame()))
    distribution_by_algorithm: pd.DataFrame = field(default_factory=pd.DataFrame)  # the distribution pooled per algorithm
    capability_samples: dict[tuple[str, str], Any] = field(default_factory=dict)  # (variant, capability) -> drift resamples


def part_options(options: CompareOptions) -> PartOptions:
    """What of `options` each variant's part (captrack.analysis.variant_part) depends on."""
    return PartOptions(churn=options.churn, cluster=options.cluster, pair_deltas=options.pair_deltas,
                       bootstrap=options.bootstrap, seed=options.seed)


def analyse(data: CompareInput, options: CompareOptions = CompareOptions(), taxonomy: Taxonomy | None = None,
            progress: Callable[[str, int], None] | None = None,
            distribution_items: DistributionItems | None = None) -> Comparison:
    """Compare each variant of `data` (read by captrack.compare) against its base: no store, no files.

    ``progress(variant, paired rows)`` is called after each variant is analysed. `distribution_items`: the
    (empty) table the per-item distribution rows are added to (one with a follower: captrack.report.items_ahead).
    """
    with shared_resamples():  # each task's resamples drawn once for drift CIs, calibration and contrasts
        return _analyse(data, options, taxonomy or load_taxonomy(), progress,
                        DistributionItems() if distribution_items is None else distribution_items)


@dataclass
class _Gathered:
    """What `analyse` keeps of each pair as it goes: every pair is read, used and let go before the next one,
    so a comparison holds one variant's items at a time, not all of them."""

    options: CompareOptions
    variants: list[VariantLabels] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    transitions: list[dict[str, Any]] = field(default_factory=list)
    drift: list[dict[str, Any]] = field(default_factory=list)
    items: Items = field(default_factory=dict)
    clusters: Clusters = field(default_factory=dict)
    sources: Clusters = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    replicates: list[pd.DataFrame] = field(default_factory=list)
    pair_deltas: dict[str, pd.DataFrame | None] = field(default_factory=dict)
    trajectories: list[Trajectory] = field(default_factory=list)  # variants evaluated at training steps
    summaries: list[pd.DataFrame] = field(default_factory=list)  # the distribution summary of each variant
    calibration: list[CalibrationGroup] = field(default_factory=list)  # its bootstrap runs task by task at the end
    distribution_items: DistributionItems = field(default_factory=DistributionItems)
    by_field: dict[str, list[pd.DataFrame]] = field(default_factory=dict)
    by_field_warnings: dict[str, list[str]] = field(default_factory=dict)
    paired: dict[str, PairedItems] = field(default_factory=dict)
    item_texts: dict[tuple[str, str], dict[int, ItemText]] = field(default_factory=dict)
    texts_unavailable: set[str] = field(default_factory=set)
    chunks: VariantChunks = field(default_factory=VariantChunks)  # a large variant's chunks, until its last

    def add(self, pair: PairInput) -> int | None:
        """Take what the comparison needs from one pair, or from one chunk of a large variant (what the variant as a
        whole gives is taken at its last: captrack.analysis.variant_chunks); the variant's paired rows once whole."""
        options = self.options
        part = pair.part if pair.part is not None else variant_part(pair, part_options(options))
        if options.distribution and pair.choices is not None and not pair.choices.empty:
            items, summary = diagnose(pair.choices)
            self.distribution_items.add(items)
            self.summaries.append(summary)
            self.calibration += calibration_inputs(pair.choices)
        for key, texts in pair.item_texts.items():  # the base's files serve every variant: each pair read its own flips
            self.item_texts.setdefault(key, {}).update(texts)
        self.texts_unavailable.update(pair.texts_unavailable)
        whole = self.chunks.add(pair, part)
        if whole is None:
            return None
        pair, part, rows = whole
        paired, variant = pair.paired, pair.spec
        self.variants.append(variant)
        if pair.steps:  # the last step is the end point
            self.trajectories.append(Trajectory(variant, pair.steps, *step_labels(pair, options.cluster)))
        self.differences += pair.setting_differences
        self.warnings += [*pair.warnings, *part.warnings]
        self.items |= part.items
        self.clusters |= part.clusters
        self.sources |= part.sources
        self.transitions += part.transitions
        self.drift += part.drift
        self.replicates.append(part.per_replicate.assign(variant=variant.name))
        self.counts[variant.name] = part.counts | {"nan_excluded": paired.nan_excluded, "replicates": paired.replicates}
        self.counts[variant.name] |= {"seeds": paired.seeds} if paired.seeds is not None else {}  # one run each, other seeds
        self.pair_deltas[variant.name] = part.pair_deltas
        for name in options.by:
            frame = field_table(pair, name, options.bootstrap, options.seed, options.level,
                                self.by_field_warnings.setdefault(name, []))
            self.by_field.setdefault(name, []).append(frame)
        if options.drill_limit:  # drill-down pages list flipped items from them
            self.paired[variant.name] = paired
        return rows


def _analyse(data: CompareInput, options: CompareOptions, taxonomy: Taxonomy,
             progress: Callable[[str, int], None] | None, distribution_items: DistributionItems) -> Comparison:
    got = _Gathered(options, chunks=VariantChunks(keep_items=bool(options.drill_limit)), distribution_items=distribution_items)
    for pair in data.pairs:
        rows = got.add(pair)
        if progress is not None and rows is not None:
            progress(pair.spec.name, rows)
        del pair  # else the loop holds this variant's items while the next one is read
    items, clusters, drift, warnings = got.items, got.clusters or None, got.drift, got.warnings
    boot = bootstrap_drift(items, options.bootstrap, options.seed, clusters)
    warnings += _fill_cis(drift, boot, options.level, items, clusters)
    drift_df = drift_verdicts(_finish_drift(drift, taxonomy), items, options.margin, clusters)
    transitions_df = _finish_transitions(pd.DataFrame(got.transitions), drift_df, taxonomy)
    power = power_table(items, options.assume_discordance)
    with_rates = _with_rates(drift_df, transitions_df, power)
    capabilities = capability_verdicts(aggregate_capabilities(with_rates, taxonomy, boot=boot), drift_df, items,
                                       taxonomy, options.margin, clusters, got.sources or None)
    rep_df = pd.concat(got.replicates, ignore_index=True)[REPLICATE_COLUMNS] if got.replicates else pd.DataFrame(columns=REPLICATE_COLUMNS)
    dist_items, dist = got.distribution_items, _joined_summaries(got.summaries)
    calib = calibration_table(got.calibration, n_resamples=options.bootstrap, seed=options.seed) if got.calibration else pd.DataFrame()
    transitions_df = _with_choice_churn(transitions_df, dist_items.churn)
    warnings += _untracked(drift_df)
    variants = got.variants
    comparison = Comparison(
        base=data.base, variants=variants, transitions=transitions_df[TRANSITION_COLUMNS], drift=drift_df,
        capabilities=capabilities, replicates=rep_df, warnings=warnings, setting_differences=got.differences,
        margin=options.margin, counts=got.counts, replicate_spread=_replicate_spread(rep_df, taxonomy),
        distribution_items=dist_items, distribution=dist, calibration=calib,
        judged=data.judged, output_types=data.output_types, paired=got.paired, power=power,
        contrasts=_contrasts(with_rates, boot, taxonomy, options, data.base, variants, items, transitions_df, dist_items),
        curves=curve_tables(got.trajectories, taxonomy, options.bootstrap, options.seed, options.level, options.margin)
        if got.trajectories else None,
        item_texts=got.item_texts, texts_unavailable=sorted(got.texts_unavailable),
        compatible=compatible_table(drift_df, taxonomy, [v.name for v in variants]),
        distribution_by_algorithm=aggregate_by_algorithm(dist) if not dist.empty else pd.DataFrame(),
        capability_samples=capability_samples(drift_df, boot),
    )
    for name in options.by:
        warnings += got.by_field_warnings.get(name, [])
    comparison.by_field = join_field_tables(got.by_field, options.by)
    if options.pair_deltas:
        comparison.pair_deltas = _pair_deltas(got.pair_deltas)
    return comparison


def _pair_deltas(deltas: dict[str, pd.DataFrame | None]) -> pd.DataFrame:
    """Per variant with tracked transitions: each (task, metric)'s base and variant means and the change's
    paired bootstrap CI (captrack.analysis.variant_part.variant_part computed them)."""
    frames = [frame for frame in deltas.values() if frame is not None]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PAIR_DELTA_COLUMNS)




def _with_choice_churn(transitions: pd.DataFrame, counts: Mapping[tuple[str, str], float]) -> pd.DataFrame:
    """Fill answer_churn of option-likelihood tasks' `acc` rows from the per-choice diagnostics' counts."""
    if not counts or transitions.empty:
        return transitions
    keys = list(zip(transitions["variant"], transitions["task"], strict=True))
    fill = [counts.get((str(v), str(t)), math.nan) if m == "acc" else math.nan
            for (v, t), m in zip(keys, transitions["metric"], strict=True)]
    return transitions.assign(answer_churn=transitions["answer_churn"].where(transitions["answer_churn"].notna(), fill))


def _untracked(drift: pd.DataFrame) -> list[str]:
    """A warning naming the (task, metric)s outside the taxonomy (in no capability aggregate), if any."""
    names = sorted({f"{t}/{m}" for t, m, c in zip(drift["task"], drift["metric"], drift["capability"], strict=True) if not c})
    return ["not in the taxonomy, so in no capability aggregate: " + ", ".join(names)] if names else []


def _contrasts(with_rates: pd.DataFrame, boot: dict[tuple[str, str, str], Any], taxonomy: Taxonomy, options: CompareOptions,
               base: str, variants: Sequence[VariantLabels], items: Items, transitions: pd.DataFrame,
               dist_items: DistributionItems) -> pd.DataFrame:
    """Algorithm pairs: mean |drift| (captrack.analysis.ranking), then F_adj and 1 − BC (captrack.analysis.contrasts)."""
    pairs = algorithm_contrasts(with_rates, boot, taxonomy, options.level, base)
    return item_contrasts(pairs, {v.name: v.algorithm for v in variants}, items, transitions, dist_items.one_minus_bc,
                          options.bootstrap, options.seed, options.level)


def _with_rates(drift: pd.DataFrame, transitions: pd.DataFrame, power: pd.DataFrame) -> pd.DataFrame:
    """Drift rows with their task's F, BT and MDE beside them (what capability aggregates average)."""
    keys = ["variant", "task", "metric"]
    rates = transitions[[*keys, "forgetting", "backward_transfer"]].drop_duplicates()
    return drift.merge(rates, on=keys, how="left").merge(power[[*keys, "n", "mde_pct"]], on=keys, how="left")


def _joined_summaries(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The variants' distribution summaries as one table, sorted by (variant, algorithm, task) as one grouping of
    all items orders them."""
    if not parts:
        return pd.DataFrame()
    return pd.concat(parts, ignore_index=True).sort_values(KEYS, kind="stable").reset_index(drop=True)


def _finish_transitions(frame: pd.DataFrame, drift: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    """Transition rows with the verdict's p-value (drift.csv's, the same test) and BH q-values of those p-values,
    so a q < 0.05 is always a verdict whose CI excludes 0 (mcnemar_p, the exact test, is kept beside them)."""
    if frame.empty:
        return pd.DataFrame(columns=TRANSITION_COLUMNS)
    keys = ["variant", "task", "metric"]
    frame = frame.merge(drift[[*keys, "p_value"]].drop_duplicates(keys), on=keys, how="left")
    frame["q_value"] = bh_qvalues(frame["p_value"].to_numpy(dtype=float))
    frame["k"] = frame["k"].astype("Int64")
    return with_membership(frame, taxonomy)


def _fill_cis(rows: list[dict[str, Any]], boot: dict[tuple[str, str, str], Any], level: float, items: Items,
              clusters: Clusters | None) -> list[str]:
    """Set each drift row's CI of relative drift (captrack.analysis.bootstrap.drift_ci); a warning names the rows
    whose CI was withheld because some bootstrap resamples had a base mean of 0."""
    dropped: list[str] = []
    empty = (np.empty(0), np.empty(0))
    for row in rows:
        key = (row["variant"], row["task"], row["metric"])
        base, variant = items.get(key, empty)
        row["ci_low"], row["ci_high"], share = drift_ci(base, variant, boot.get(key), level,
                                                        bool(clusters and key in clusters))
        if share > 0:
            dropped.append(f"{row['variant']}: {row['task']}/{row['metric']} ({100 * share:.1f}%)")
    if dropped:
        return ["relative drift CI withheld where bootstrap resamples had a base mean of 0 (no relative drift; the "
                "share of such resamples in brackets): " + ", ".join(dropped)]
    return []


def _finish_drift(rows: list[dict[str, Any]], taxonomy: Taxonomy) -> pd.DataFrame:
    """Drift rows with capability membership, the direction (taxonomy's, else the MetricSpec's) and oriented drift."""
    frame = with_membership(pd.DataFrame(rows), taxonomy) if rows else _empty_drift()
    frame["direction"] = frame["direction_spec"].where(frame["direction"].isna(), frame["direction"])
    frame["oriented_drift_pct"] = [
        oriented_drift(r, d) for r, d in zip(frame["rel_drift_pct"], frame["direction"], strict=True)
    ]
    return frame


def _empty_drift() -> pd.DataFrame:
    return pd.DataFrame(columns=[*DRIFT_COLUMNS, "facet", "direction_spec"])


def _replicate_spread(rep: pd.DataFrame, taxonomy: Taxonomy) -> dict[str, dict[str, float]]:
    """Per variant and capability: population std over replicates of the capability mean drift."""
    if rep.empty or rep["replicate"].nunique() < 2:
        return {}
    merged = with_membership(rep, taxonomy)
    merged = merged[merged["capability"] != ""]
    means = merged.groupby(["variant", "capability", "replicate"])["rel_drift_pct"].mean()
    spread = means.groupby(["variant", "capability"]).std(ddof=0)
    out: dict[str, dict[str, float]] = {}
    for (variant, capability), value in spread.items():
        out.setdefault(str(variant), {})[str(capability)] = float(value)
    return out
