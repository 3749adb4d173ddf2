"""Transitions and drift broken down by a document field (`captrack compare --by category`).

Per (variant, task, metric, value of the field): the transition counts, F / BT and their chance-
adjusted forms, the exact McNemar p-value, and the change in the metric's mean (variant − base)
with a paired bootstrap CI (items resampled jointly for base and variant, within the group).
Without a field (``groups=None``) the same table has one row per (task, metric): the per-pair view.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.bootstrap import resample_counts
from captrack.analysis.item_rows import one_row_items, pandas_mean
from captrack.analysis.stats import bh_qvalues, mcnemar_exact, percentile_ci
from captrack.analysis.transitions import Transitions, count_transitions
from captrack.errors import InputError, UnknownNameError
from captrack.metrics.registry import MetricSpec, get_metric
from captrack.output_names import by_field_file

if TYPE_CHECKING:
    from captrack.analysis.types import PairInput
    from captrack.labels import VariantLabels

__all__ = ["GROUP_STAT_COLUMNS", "field_table", "group_table", "join_field_tables"]

GROUP_STAT_COLUMNS = [
    "n", "n_11", "n_10", "n_01", "n_00", "base_value", "variant_value", "delta", "delta_ci_low", "delta_ci_high",
    "forgetting", "backward_transfer", "k", "forgetting_adj", "backward_transfer_adj", "mcnemar_p", "q_value",
]
"""Columns after ``variant, algorithm, task, metric[, <field>]``; proportions are fractions, delta = variant − base."""


def _spec(metric: str) -> MetricSpec | None:
    try:
        return get_metric(metric)
    except UnknownNameError:
        return None


def _mode(values: NDArray[np.float64]) -> float | None:
    """The most common value (the smallest of equally common ones, as pandas' mode), ignoring NaN; None if none."""
    values = values[~np.isnan(values)]
    if not values.size:
        return None
    found, counts = np.unique(values, return_counts=True)
    return float(found[int(np.argmax(counts))])


def _transition_stats(base: NDArray[np.float64], variant: NDArray[np.float64], n_choices: NDArray[np.float64],
                      spec: MetricSpec | None) -> dict[str, Any]:
    """Counts, rates and McNemar p of a group's rows (pooled over replicates); NaN for a non-binary metric."""
    if not (np.isin(base, (0.0, 1.0)).all() and np.isin(variant, (0.0, 1.0)).all()):
        return dict.fromkeys(("n_11", "n_10", "n_01", "n_00", "forgetting", "backward_transfer", "k",
                              "forgetting_adj", "backward_transfer_adj", "mcnemar_p"), math.nan)
    t = count_transitions(base, variant)
    n11, n10, n01, n00 = t.n_11, t.n_10, t.n_01, t.n_00
    if spec is not None and spec.direction == "lower":  # 1 is the bad outcome: flip
        n11, n10, n01, n00 = n00, n01, n10, n11
    mode = _mode(n_choices)
    k = int(mode) if mode is not None and (spec is None or spec.chance_from_choices) else None
    t = Transitions(n11, n10, n01, n00, k=k)
    return {"n_11": n11, "n_10": n10, "n_01": n01, "n_00": n00, "forgetting": t.forgetting,
            "backward_transfer": t.backward_transfer, "k": k if k is not None else math.nan,
            "forgetting_adj": t.forgetting_adj, "backward_transfer_adj": t.backward_transfer_adj,
            "mcnemar_p": mcnemar_exact(n10, n01)}


def _delta_stats(base: NDArray[np.float64], variant: NDArray[np.float64], key: str, n_resamples: int, seed: int,
                 level: float) -> dict[str, Any]:
    """A group's item means (over replicates), their difference and its paired bootstrap CI."""
    low = high = math.nan
    if n_resamples > 0 and len(base):
        counts = resample_counts(key, len(base), n_resamples, seed).astype(np.float64)
        low, high = percentile_ci(counts @ (variant - base) / len(base), level)
    return {"n": len(base), "base_value": float(base.mean()), "variant_value": float(variant.mean()),
            "delta": float(variant.mean() - base.mean()), "delta_ci_low": low, "delta_ci_high": high}


def group_table(items: pd.DataFrame, variant: VariantLabels, groups: pd.Series | None = None, field: str = "",
                n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> pd.DataFrame:
    """Per (task, metric[, group]) of paired `items`: transitions, F/BT (adjusted), McNemar p, delta and its CI.

    Args:
        items: paired items (captrack.results.pairing.PairedItems.items).
        groups: the group of each row of `items` (same index); rows whose group is None are left out.
        field: the name of the group column (required with `groups`).

    Returns:
        Columns ``variant, algorithm, task, metric[, field]`` then :data:`GROUP_STAT_COLUMNS`
        (q_value: Benjamini–Hochberg across the table's rows).
    """
    keys = ["task", "metric"]
    frame = items
    if groups is not None:
        frame = items.assign(**{"_group": groups}).dropna(subset=["_group"])
        keys.append("_group")
    base_rows, variant_rows = frame["base"].to_numpy(dtype=float), frame["variant"].to_numpy(dtype=float)
    n_choices = frame["n_choices"].to_numpy(dtype=float, na_value=np.nan)
    one_row = one_row_items(frame) if groups is None else None
    if one_row is not None:  # each item its row, in order: its mean is its value, its key's rows a slice
        mean_base, mean_variant = pandas_mean(base_rows), pandas_mean(variant_rows)
        found: list[tuple[tuple[Any, ...], Any, slice]] = [((task, metric), rows, rows)
                                                           for (task, metric), rows in one_row.runs.items()]
    else:
        mean_base, mean_variant, found = _group_means(frame, keys)
    rows = []
    for key, at, mean_slice in found:
        task, metric = str(key[0]), str(key[1])
        boot_key = task if groups is None else f"{task}\x1f{key[2]}"
        row = {"variant": variant.name, "algorithm": variant.algorithm, "task": task, "metric": metric}
        if groups is not None:
            row[field] = str(key[2])
        rows.append(row | _delta_stats(mean_base[mean_slice], mean_variant[mean_slice], boot_key, n_resamples, seed, level)
                    | _transition_stats(base_rows[at], variant_rows[at], n_choices[at], _spec(metric)))
    columns = ["variant", "algorithm", "task", "metric", *([field] if groups is not None else []), *GROUP_STAT_COLUMNS]
    table = pd.DataFrame(rows, columns=columns)
    table["q_value"] = bh_qvalues(table["mcnemar_p"].to_numpy(dtype=float))
    for column in ("n_11", "n_10", "n_01", "n_00", "k"):
        table[column] = table[column].astype("Int64")
    return table


def _group_means(frame: pd.DataFrame, keys: list[str]) -> tuple[NDArray[np.float64], NDArray[np.float64],
                                                                 list[tuple[tuple[Any, ...], Any, slice]]]:
    """Item means of every group by one groupby (each key's items, by doc_hash and occ, are contiguous and in the order
    a groupby of the group alone gives), and per key (sorted): its rows' positions and its items' slice of the means."""
    means = frame.groupby([*keys, "doc_hash", "occ"], sort=True)[["base", "variant"]].mean()
    ends = np.cumsum(means.groupby(level=list(range(len(keys))), sort=True).size().to_numpy())
    grouped = frame.groupby(keys, sort=True)
    positions = np.argsort(grouped.ngroup().to_numpy(), kind="stable")
    row_ends = np.cumsum(grouped.size().to_numpy())
    found = []
    for i, key in enumerate(grouped.size().index):
        at = positions[(row_ends[i - 1] if i else 0):row_ends[i]]
        found.append((key if isinstance(key, tuple) else (key,), at, slice(int(ends[i - 1]) if i else 0, int(ends[i]))))
    return means["base"].to_numpy(dtype=float), means["variant"].to_numpy(dtype=float), found


def field_table(pair: PairInput, field: str, n_resamples: int, seed: int, level: float, warnings: list[str]) -> pd.DataFrame:
    """One variant's group table for doc field `field` (the pair holds the field's values, read by
    captrack.compare); items without the field are left out, saying so in `warnings`."""
    paired, variant, values = pair.paired, pair.spec, pair.fields[field]
    missing = sorted(set(paired.items.loc[values.isna(), "task"]))
    if missing:
        warnings.append(f"{variant.name}: items without doc field {field!r} left out of {by_field_file(field)} "
                        f"(tasks {', '.join(missing)})")
    return group_table(paired.items, variant, values, field, n_resamples, seed, level)


def join_field_tables(frames: Mapping[str, Sequence[pd.DataFrame]], fields: Sequence[str]) -> dict[str, pd.DataFrame]:
    """For each field, the group tables of every variant (`field_table`) as one frame, q-values across all its rows.

    Raises:
        InputError: no paired item of any task has the field (the message lists where it was looked for).
    """
    out: dict[str, pd.DataFrame] = {}
    for field in fields:
        parts = frames.get(field, [])
        table = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        if table.empty:
            raise InputError(f"--by {field}: no compared document has a field {field!r} (looked at each doc's top "
                             "level and its meta); check the name against the samples files' doc")
        table["q_value"] = bh_qvalues(table["mcnemar_p"].to_numpy(dtype=float))
        out[field] = table
    return out
