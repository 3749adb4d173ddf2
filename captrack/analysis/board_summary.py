"""A leaderboard's tables, computed from its comparisons before any page is drawn: the comparisons' tables joined
with the variants' labels, per algorithm and capability, per checkpoint, and each task's flipped items."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.algorithm_interval import AlgorithmInterval, algorithm_interval
from captrack.analysis.board_floor import BoardFloor, board_floor
from captrack.analysis.target_share import TARGET_COLUMNS, without_target
from captrack.analysis.transitions import flipped_rows
from captrack.analysis.verdicts import SIGNIFICANT_VERDICTS
from captrack.labels import FLOOR_ALGORITHM
from captrack.metrics.registry import lower_is_better
from captrack.taxonomy import load_taxonomy

if TYPE_CHECKING:
    from captrack.analysis.comparison import Comparison
    from captrack.labels import VariantLabels

__all__ = ["ALGORITHM_COLUMNS", "CHECKPOINT_COLUMNS", "BoardTables", "Flipped", "Flips", "algorithm_summary", "board_tables", "checkpoint_rows"]


@dataclass(frozen=True)
class Flipped:
    """A (variant, task, metric)'s first flipped items (up to a limit), in `flipped_items`' order
    (captrack.analysis.transitions): their doc ids, doc hashes and changes (forgotten / gained), the base and
    variant runs of the first ("" without any), and how many flipped in all. Plain lists: thousands of them are
    read item by item for the task pages."""

    doc_ids: list[int]
    doc_hashes: list[str]
    changes: list[str]
    base_run: str
    variant_run: str
    total: int


NO_FLIPS = Flipped([], [], [], "", "", 0)

Flips = dict[str, dict[tuple[str, str], Flipped]]
"""variant -> (task, metric) -> its flipped items."""


@dataclass
class BoardTables:
    """What a board shows, computed: `frames` (capabilities with labels, drift, transitions, labels, power,
    contrasts), the per-algorithm summary, the per-checkpoint rows and each variant's flipped items."""

    frames: dict[str, pd.DataFrame]
    algorithms: pd.DataFrame
    checkpoints: pd.DataFrame
    variants: list[str]
    aggregate_only: bool
    flips: Flips = field(default_factory=dict)
    targets: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=TARGET_COLUMNS))  # target_share.without_target
    floor: BoardFloor = field(default_factory=BoardFloor)
    """The backend's A/A floor pairs (captrack.analysis.board_floor): in `frames`' transitions, drift, capabilities and
    power (their CSVs), never in `variants`, the algorithm summary, the checkpoints or the contrasts."""


def board_tables(comparisons: Sequence[tuple[Comparison, dict[str, VariantLabels]]], drill_limit: int = 0,
                 target: str = "") -> BoardTables:
    """The board's tables from its comparisons (each with its variants' labels); `drill_limit`: how many flipped
    items per (variant, task, metric) the task pages list (0: no task pages); `target`: the post-training's target
    task, whose capability is also shown without it (captrack.analysis.target_share)."""
    frames = _joined(comparisons)
    aggregate_only = all(c.aggregate_only for c, _ in comparisons)
    floor = board_floor(frames["transitions"], frames["labels"])  # a reference beside the variants, not one of them
    variants = [v.name for c, _ in comparisons for v in c.variants if v.name not in floor.names]
    flips = _flips(comparisons, frames["transitions"], drill_limit) if drill_limit else {}
    samples = {key: rows for c, _ in comparisons for key, rows in c.capability_samples.items()}
    caps, drift = frames["capabilities"], frames["drift"]
    if floor.names:  # not ranked, not summarised per algorithm
        caps, drift = caps[~caps["variant"].isin(floor.names)], drift[~drift["variant"].isin(floor.names)]
        contrasts = frames["contrasts"].reindex(columns=frames["contrasts"].columns.union(["algorithm_a", "algorithm_b"], sort=False))
        frames["contrasts"] = contrasts[~contrasts[["algorithm_a", "algorithm_b"]].isin([FLOOR_ALGORITHM]).any(axis=1)]
    return BoardTables(frames, algorithm_summary(caps, aggregate_only, samples), checkpoint_rows(frames, variants),
                       variants, aggregate_only, flips, without_target(caps, drift, target), floor)


def _joined(comparisons: Sequence[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[str, pd.DataFrame]:
    labels = {name: (c.base, lab) for c, labs in comparisons for name, lab in labs.items()}
    label_frame = pd.DataFrame([{"variant": n, "base": base, "family": v.family, "size": v.size,
                                 "data": v.data, "label_algorithm": v.algorithm} for n, (base, v) in labels.items()])
    caps = pd.concat([c.capabilities for c, _ in comparisons], ignore_index=True).merge(label_frame, on="variant")
    caps["algorithm"] = caps["label_algorithm"].where(caps["label_algorithm"] != "", caps["algorithm"])
    caps = caps.drop(columns="label_algorithm")
    drift = pd.concat([c.drift for c, _ in comparisons], ignore_index=True)
    trans = pd.concat([c.transitions for c, _ in comparisons], ignore_index=True)
    power = pd.concat([c.power for c, _ in comparisons], ignore_index=True)
    contrasts = pd.concat([c.contrasts for c, _ in comparisons], ignore_index=True)
    return {"capabilities": caps, "drift": drift, "transitions": trans, "labels": label_frame, "power": power,
            "contrasts": contrasts}


def _flips(comparisons: Sequence[tuple[Comparison, dict[str, VariantLabels]]], transitions: pd.DataFrame,
           limit: int) -> Flips:
    """Per variant with paired items, each of its (task, metric)'s first `limit` flipped items, found at once."""
    paired = {name: p for c, _ in comparisons for name, p in c.paired.items()}
    flips: Flips = {}
    trans = transitions.drop_duplicates(["variant", "task", "metric"])
    for variant, rows_of in trans.groupby("variant", sort=True):
        if str(variant) not in paired:
            continue
        lower = {(str(t), str(m)): lower_is_better(str(m)) for t, m in zip(rows_of["task"], rows_of["metric"], strict=True)}
        flips[str(variant)] = _flipped(paired[str(variant)].items, lower, limit)
    return flips


def _flipped(items: pd.DataFrame, lower: dict[tuple[str, str], bool], limit: int) -> dict[tuple[str, str], Flipped]:
    """One variant's flipped items of each (task, metric) in `lower` (True: lower is better), as `flipped_by_key`
    finds them, without a frame per (task, metric)."""
    found = flipped_rows(items, lower)
    columns = {name: items[name].to_numpy(dtype=object)[found.order] for name in ("doc_hash", "base_run", "variant_run")}
    doc_ids = items["doc_id"].to_numpy()[found.order]
    changes = np.where(found.forgotten, "forgotten", "gained")
    out = {}
    for key, (first, end) in found.spans.items():
        shown = slice(first, min(end, first + limit))
        out[key] = Flipped(doc_ids[shown].tolist(), columns["doc_hash"][shown].tolist(), changes[shown].tolist(),
                           str(columns["base_run"][first]), str(columns["variant_run"][first]), end - first)
    return {key: out.get(key, NO_FLIPS) for key in lower}


ALGORITHM_COLUMNS = ["algorithm", "key", "n_variants", "mean_rel_drift_pct", "ci_low", "ci_high", "forgetting",
                     "backward_transfer", "oriented_drift_pct", "ci_df", "between_se", "shared_se", "ci_note"]
"""algorithms.csv: per algorithm and capability, the mean relative drift over its variants and the interval of the
algorithm's mean (captrack.analysis.algorithm_interval: none from fewer than 3 variants; `ci_note` says how it was
made or why there is none)."""


def algorithm_summary(caps: pd.DataFrame, aggregate_only: bool = False,
                      samples: Mapping[tuple[str, str], NDArray[np.floating[Any]]] | None = None,
                      level: float = 0.95) -> pd.DataFrame:
    """Per algorithm and capability: mean drift over variants, the interval of the algorithm's mean (none for
    aggregate scores, fewer than 3 variants or without `samples`: (variant, capability) -> the capability's joint
    bootstrap resamples, captrack.analysis.algorithm_interval), and mean F / BT."""
    out = []
    rows = caps[(caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    for (algorithm, key), frame in rows.groupby(["algorithm", "key"], sort=True):
        values = frame["mean_rel_drift_pct"].to_numpy(dtype=float)
        if aggregate_only:
            interval = AlgorithmInterval(math.nan, math.nan, math.nan, math.nan, math.nan, "none: aggregate scores")
        else:
            interval = algorithm_interval(values, _joint_samples(samples or {}, frame["variant"], str(key)), level)
        oriented = frame["oriented_drift_pct"] if "oriented_drift_pct" in frame else frame["mean_rel_drift_pct"]
        out.append({"algorithm": algorithm or "(none)", "key": key, "n_variants": len(values),
                    "mean_rel_drift_pct": float(values.mean()), "ci_low": interval.low, "ci_high": interval.high,
                    "forgetting": frame["forgetting"].mean(), "backward_transfer": frame["backward_transfer"].mean(),
                    "oriented_drift_pct": oriented.mean(), "ci_df": interval.df, "between_se": interval.between_se,
                    "shared_se": interval.shared_se, "ci_note": interval.note})
    order = {c.key: i for i, c in enumerate(load_taxonomy().capabilities)}
    frame = pd.DataFrame(out, columns=ALGORITHM_COLUMNS)
    return frame.sort_values(["key", "algorithm"], key=lambda s: s.map(order) if s.name == "key" else s).reset_index(drop=True)


def _joint_samples(samples: Mapping[tuple[str, str], NDArray[np.floating[Any]]], variants: pd.Series, key: str
                   ) -> NDArray[np.float64] | None:
    """The variants' resamples of capability `key`, one row each (None unless every variant has them, all alike long)."""
    rows = [samples.get((str(variant), key)) for variant in variants]
    if not rows or any(row is None for row in rows) or len({row.shape for row in rows if row is not None}) != 1:
        return None
    return np.vstack([np.asarray(row, dtype=np.float64) for row in rows if row is not None])


def checkpoint_rows(tables: dict[str, pd.DataFrame], variants: list[str]) -> pd.DataFrame:
    """Per variant: its labels, group drifts (CAN, WILL, HOW; relative, %), mean F_adj / BT_adj, and how many of its
    task metrics with a verdict are significant (verdict regressed, improved or changed: the 95% CI of Δ excludes 0)."""
    caps, trans = tables["capabilities"], tables["transitions"].drop_duplicates(["variant", "task", "metric"])
    drift = tables["drift"].drop_duplicates(["variant", "task", "metric"])
    verdicts = drift["verdict"] if "verdict" in drift else pd.Series("", index=drift.index, dtype=object)
    judged = drift.assign(verdict=verdicts)[verdicts.map(lambda v: isinstance(v, str) and v != "")]
    labels = tables["labels"].set_index("variant")
    groups = caps[caps["level"] == "group"]
    group_drift = {(str(v), str(k)): d for v, k, d in zip(groups["variant"], groups["key"], groups["mean_rel_drift_pct"], strict=True)}
    caps_of, trans_of, judged_of = (_positions(frame["variant"]) for frame in (caps, trans, judged))
    adjusted = {name: trans[name].astype(float) for name in ("forgetting_adj", "backward_transfer_adj")}
    judged_verdicts = judged["verdict"].to_numpy(dtype=object)
    out = []
    for name in variants:
        lab = labels.loc[name]
        mine_trans, mine = trans_of.get(name, _NONE), judged_verdicts[judged_of.get(name, _NONE)]
        algorithm = caps["algorithm"].iloc[caps_of[name][0]]
        out.append({"variant": name, "base": lab["base"], "family": lab["family"], "size": lab["size"],
                    "algorithm": algorithm, "data": lab["data"],
                    **{g: group_drift.get((name, g), math.nan) for g in ("CAN", "WILL", "HOW")},
                    **{key: column.take(mine_trans).mean() if len(mine_trans) else math.nan for key, column in adjusted.items()},
                    "significant_tasks": int(sum(isinstance(v, str) and v in SIGNIFICANT_VERDICTS for v in mine)), "tasks": len(mine)})
    return pd.DataFrame(out) if out else pd.DataFrame(columns=CHECKPOINT_COLUMNS)  # a board of its A/A floor alone


CHECKPOINT_COLUMNS = ["variant", "base", "family", "size", "algorithm", "data", "CAN", "WILL", "HOW", "forgetting_adj",
                      "backward_transfer_adj", "significant_tasks", "tasks"]
"""checkpoints.csv's columns (one row per variant)."""


_NONE = np.array([], dtype=np.intp)


def _positions(variants: pd.Series) -> dict[str, np.ndarray]:
    """Each variant's row positions in a frame, in the frame's order (one pass, not a comparison per variant)."""
    return {str(name): rows for name, rows in variants.groupby(variants, sort=False).indices.items()}
