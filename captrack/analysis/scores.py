"""`captrack compare --scores`: drift from aggregated scores only (no items, so no transitions)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from captrack.analysis.comparison import REPLICATE_COLUMNS, TRANSITION_COLUMNS, Comparison
from captrack.analysis.drift import (
    aggregate_capabilities,
    compatible_table,
    oriented_drift,
    relative_drift,
    with_membership,
)
from captrack.errors import InputError, UnknownNameError
from captrack.labels import VariantLabels
from captrack.taxonomy import Taxonomy, load_taxonomy

__all__ = ["REQUIRED_COLUMNS", "compare_scores", "read_scores", "scores_from_reference"]

REQUIRED_COLUMNS = ("model", "task", "metric", "value", "base")


def read_scores(path: str | Path, taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """Read and validate a tidy scores CSV: model, task, metric, value, base[, algorithm].

    ``base`` names, on each row, the model this row's model is compared with (on the base's own
    rows it is the base itself or empty).

    Raises:
        InputError: missing columns, non-numeric values, duplicate rows, or a base with no rows.
        UnknownNameError: a (task, metric) the taxonomy does not know (closest match named).
    """
    taxonomy = taxonomy or load_taxonomy()
    try:
        frame = pd.read_csv(path, dtype={"model": str, "task": str, "metric": str, "base": str})
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read scores CSV: {exc}") from exc
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; expected {list(REQUIRED_COLUMNS)} (+ algorithm)")
    frame["base"] = frame["base"].fillna("")
    frame["algorithm"] = frame["algorithm"].fillna("").astype(str) if "algorithm" in frame else ""
    values = pd.to_numeric(frame["value"], errors="coerce")
    bad = frame.index[values.isna() & frame["value"].notna()]
    if len(bad):
        raise InputError(f"{path}, line {int(bad[0]) + 2}: value {frame.loc[bad[0], 'value']!r} is not a number")
    frame["value"] = values.astype(float)
    dupes = frame[frame.duplicated(["model", "task", "metric"], keep=False)]
    if not dupes.empty:
        first = dupes.iloc[0]
        raise InputError(f"{path}: {len(dupes)} duplicate rows, e.g. model {first['model']!r} {first['task']}/{first['metric']}")
    for task, metric in frame[["task", "metric"]].drop_duplicates().itertuples(index=False):
        try:
            taxonomy.members_of(str(task), str(metric))
        except UnknownNameError as exc:
            raise InputError(f"{path}: {exc}; a scores file has no per-sample logs, so each (task, metric) must be "
                             "in the taxonomy: add yours with `captrack compare --taxonomy EXTRA.yaml`") from exc
    return frame


def compare_scores(frame: pd.DataFrame, taxonomy: Taxonomy | None = None) -> Comparison:
    """Relative and oriented drift of every variant against its base, with capability aggregates."""
    taxonomy = taxonomy or load_taxonomy()
    frame = frame.assign(algorithm=frame["algorithm"].fillna("") if "algorithm" in frame else "")
    models = set(frame["model"])
    is_base = (frame["base"] == "") | (frame["base"] == frame["model"])
    bases = set(frame.loc[~is_base, "base"])
    unknown = sorted(bases - models)
    if unknown:
        raise InputError(f"base model(s) {unknown} have no rows in the scores file")
    if len(bases) != 1:
        raise InputError(f"the scores file names {len(bases)} bases ({sorted(bases)}); compare one base at a time")
    base = bases.pop()
    base_values = frame[frame["model"] == base].set_index(["task", "metric"])["value"]
    rows, warnings = [], []
    variants: list[VariantLabels] = []
    for name, own in frame[~is_base].groupby("model", sort=False):
        variants.append(VariantLabels(name=str(name), algorithm=str(own["algorithm"].iloc[0])))
        for task, metric, value in own[["task", "metric", "value"]].itertuples(index=False):
            if (task, metric) not in base_values.index:
                warnings.append(f"{name}: {task}/{metric} has no base value; skipped")
                continue
            base_value = float(base_values[(task, metric)])
            rel = relative_drift(base_value, float(value))
            if base_value == 0:
                warnings.append(f"{name}: base value of {task}/{metric} is 0, so its relative drift is NaN")
            rows.append({"variant": name, "algorithm": variants[-1].algorithm, "task": task, "metric": metric,
                         "base_value": base_value, "variant_value": float(value), "rel_drift_pct": rel,
                         "ci_low": math.nan, "ci_high": math.nan})
    drift = with_membership(pd.DataFrame(rows), taxonomy)
    drift["oriented_drift_pct"] = [oriented_drift(r, d) for r, d in zip(drift["rel_drift_pct"], drift["direction"], strict=True)]
    return Comparison(
        base=base,
        variants=variants,
        transitions=pd.DataFrame(columns=TRANSITION_COLUMNS),
        drift=drift,
        capabilities=aggregate_capabilities(drift, taxonomy),
        replicates=pd.DataFrame(columns=REPLICATE_COLUMNS),
        warnings=[*warnings, "aggregate scores only: no per-item data, so no confidence intervals, transitions, "
                             "minimum detectable effects or rankings can be computed"],
        counts={"rows": len(frame), "variants": len(variants)},
        aggregate_only=True,
        compatible=compatible_table(drift, taxonomy, [v.name for v in variants]),
    )


def scores_from_reference(base_csv: str | Path, variant_csvs: Mapping[str, str | Path], taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """Turn CapTrack reference ``*_averaged.csv`` files (one row, one column per metric) into the
    tidy scores format, using each taxonomy member's ``reference_column``.

    Args:
        base_csv: the base model's averaged file.
        variant_csvs: variant label -> its averaged file.

    Raises:
        InputError: a file is unreadable or lacks a column the taxonomy maps.
    """
    taxonomy = taxonomy or load_taxonomy()
    mapped = [m for m in taxonomy.members if m.reference_column]
    rows = []
    for label, path, base in [("base", base_csv, "")] + [(k, v, "base") for k, v in variant_csvs.items()]:
        try:
            wide = pd.read_csv(path, index_col=0)
        except (OSError, pd.errors.ParserError) as exc:
            raise InputError(f"{path}: cannot read CapTrack averaged CSV: {exc}") from exc
        if len(wide) != 1:
            raise InputError(f"{path}: expected one row of averaged scores, found {len(wide)}")
        for m in mapped:
            if m.reference_column not in wide.columns:
                raise InputError(f"{path}: no column {m.reference_column!r} ({m.task}/{m.metric})")
            rows.append({"model": label, "task": m.task, "metric": m.metric,
                         "value": float(wide[m.reference_column].iloc[0]), "base": base})
    return pd.DataFrame(rows).drop_duplicates(["model", "task", "metric"])
