"""report.md: what drifted, per variant, capability and task, and what is more than noise."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from captrack.analysis.compare import Comparison
from captrack.taxonomy import Taxonomy

__all__ = ["render_report"]


def _pct(value: Any, signed: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def _share(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.1f}%"


def _ci(low: Any, high: Any) -> str:
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return ""
    mark = " *" if low > 0 or high < 0 else ""
    return f"[{low:+.1f}, {high:+.1f}]{mark}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def render_report(comparison: Comparison, taxonomy: Taxonomy, inputs: dict[str, Any]) -> str:
    """Render the comparison as Markdown for people: summary first, details after."""
    lines = [f"# captrack comparison against `{comparison.base}`", ""]
    lines += [
        "Relative drift is CapTrack's 100·(variant − base)/base per metric, averaged per capability "
        "(± is the spread across member metrics). CI: paired bootstrap over items; `*` marks a CI "
        "that excludes 0. F = share of items forgotten (1→0), BT = share gained (0→1).",
        "",
    ]
    for variant in comparison.variants:
        lines += _variant_section(comparison, taxonomy, variant.name, variant.algorithm)
    lines += _distribution_section(comparison)
    lines += _judged_section(comparison)
    if comparison.warnings:
        lines += ["## Warnings", ""] + [f"- {w}" for w in comparison.warnings] + [""]
    lines += ["## Inputs", "", "```", *(f"{k}: {v}" for k, v in inputs.items()), "```", ""]
    return "\n".join(lines)


def _distribution_section(comparison: Comparison) -> list[str]:
    """Collapse vs drift of forgotten multiple-choice items, erosion, and calibration drift."""
    dist = comparison.distribution
    if dist.empty:
        return []
    lines = ["## Inside the forgetting (multiple-choice tasks)", "",
             "From per-option probabilities: a forgotten item is a *collapse* when the variant gives the "
             "base's answer almost no mass (< 0.4/k), *drift* when a near tie (≤ 0.5 nats) flipped, "
             "*shift* otherwise; *eroding* items kept their outcome but lost > 0.2 gold probability. "
             "BC is the Bhattacharyya overlap of base and variant option distributions (1 = identical).", ""]
    rows = [[str(r.variant), str(r.task), str(int(r.n_forgotten)), str(int(r.n_collapse)), str(int(r.n_drift)),
             str(int(r.n_shift)), str(int(r.n_eroding)), f"{r.mean_bc:.3f}", f"{r.mean_mass_retained:.3f}"]
            for r in dist.itertuples()]
    lines += [*_table(["variant", "task", "forgotten", "collapse", "drift", "shift", "eroding", "mean BC", "mass retained"], rows), ""]
    calib = comparison.calibration
    if not calib.empty:
        rows = [[str(r.variant), str(r.task), f"{r.ece_base:.3f}", f"{r.ece_variant:.3f}", _ci_plain(r.ece_change_ci_low, r.ece_change_ci_high),
                 f"{r.brier_base:.3f}", f"{r.brier_variant:.3f}"] for r in calib.itertuples()]
        lines += ["Calibration (top choice):", ""]
        lines += [*_table(["variant", "task", "ECE base", "ECE variant", "ΔECE 95% CI", "Brier base", "Brier variant"], rows), ""]
    return lines


def _judged_section(comparison: Comparison) -> list[str]:
    """Judged metrics: which judge and prompt, how many verdicts were NaN and why."""
    if not comparison.judged:
        return []
    rows = []
    for model, tasks in comparison.judged.items():
        for task, metrics in tasks.items():
            for metric, t in metrics.items():
                reasons = ", ".join(f"{code} {n}" for code, n in t["reasons"].items()) or "none"
                rows.append([str(model), str(task), str(metric), f"`{t['judge']}`", str(t["prompt"]),
                             str(t["n"]), str(t["nan"]), reasons])
    intro = ("Scored by an LLM judge (`captrack judge`). A verdict the judge did not give or that could not be "
             "parsed is NaN (never a default score) and is left out of pairing; reasons by code.")
    header = ["model", "task", "metric", "judge", "prompt", "verdicts", "NaN", "NaN reasons"]
    return ["## Judged metrics", "", intro, "", *_table(header, rows), ""]


def _ci_plain(low: Any, high: Any) -> str:
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return "n/a"
    return f"[{low:+.3f}, {high:+.3f}]"


def _variant_section(comparison: Comparison, taxonomy: Taxonomy, name: str, algorithm: str) -> list[str]:
    caps = comparison.capabilities[comparison.capabilities["variant"] == name]
    title = f"## {name}" + (f" ({algorithm})" if algorithm else "")
    lines = [title, ""]
    lines += _headlines(comparison, taxonomy, name)
    groups = caps[caps["level"] == "group"].set_index("key")
    lines.append(
        "Groups: " + ", ".join(f"{g} {_pct(groups.loc[g, 'mean_rel_drift_pct'])}" for g in groups.index) + "."
    )
    lines.append("")
    rows = []
    by_key = caps[caps["level"] == "capability"].set_index("key")
    for cap in taxonomy.capabilities:
        if cap.key not in by_key.index:
            continue
        row = by_key.loc[cap.key]
        if row["n_metrics"] == 0:
            continue
        rows.append([
            f"{cap.key} {cap.name}", _pct(row["mean_rel_drift_pct"]),
            _pct(row["std_rel_drift_pct"], signed=False), _ci(row["ci_low"], row["ci_high"]),
            _share(row["forgetting"]), _share(row["backward_transfer"]), str(int(row["n_metrics"])),
        ])
    lines += [*_table(["capability", "drift", "±", "95% CI", "F", "BT", "metrics"], rows), ""]
    lines += _task_table(comparison, name)
    lines += _unmapped_section(comparison, name)
    return lines


def _unmapped_section(comparison: Comparison, name: str) -> list[str]:
    """Tasks outside the taxonomy: analysed item by item, in no capability aggregate."""
    drift = comparison.drift[(comparison.drift["variant"] == name) & (comparison.drift["capability"].fillna("") == "")]
    if drift.empty:
        return []
    shown = ", ".join(f"`{t}/{m}`" for t, m in sorted(set(zip(drift["task"], drift["metric"], strict=True))))
    return ["### Unmapped tasks", "",
            f"Not in the taxonomy, so in no capability aggregate: {shown}. Their transitions and drift are in "
            "the per-task table above and in transitions.csv / drift.csv; map them to capabilities with "
            "`captrack compare --taxonomy EXTRA.yaml` (the schema of taxonomy/captrack.yaml).", ""]


def _headlines(comparison: Comparison, taxonomy: Taxonomy, name: str) -> list[str]:
    """Two or three sentences: the largest capability drifts and the item-level evidence."""
    caps = comparison.capabilities
    rows = caps[(caps["variant"] == name) & (caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    if rows.empty:
        return ["No capability could be measured (no tracked metric with a non-zero base).", ""]
    top = rows.reindex(rows["mean_rel_drift_pct"].abs().sort_values(ascending=False).index).head(3)
    parts = []
    for r in top.itertuples():
        sure = "CI excludes 0" if (r.ci_low > 0 or r.ci_high < 0) else "within noise"
        parts.append(f"{r.key} {taxonomy.capability(str(r.key)).name} {_pct(r.mean_rel_drift_pct)} ({sure})")
    trans = comparison.transitions[comparison.transitions["variant"] == name].drop_duplicates(["task", "metric"])
    forgotten, gained = int(trans["n_10"].sum()), int(trans["n_01"].sum())
    significant = int((trans["q_value"] < 0.05).sum())
    return [
        "Largest drifts: " + "; ".join(parts) + ".",
        f"Items forgotten (1→0): {forgotten}; gained (0→1): {gained}; "
        f"tasks with a significant change (McNemar, BH q < 0.05): {significant} of {len(trans)}.",
        "",
    ]


def _task_table(comparison: Comparison, name: str) -> list[str]:
    drift = comparison.drift[comparison.drift["variant"] == name].drop_duplicates(["task", "metric"])
    trans = comparison.transitions[comparison.transitions["variant"] == name].drop_duplicates(["task", "metric"])
    merged = drift.merge(trans, on=["task", "metric"], how="left", suffixes=("", "_t"))
    rows = []
    for r in merged.sort_values(["task", "metric"]).itertuples():
        significant = "yes" if isinstance(r.q_value, float) and r.q_value < 0.05 else ""
        rows.append([
            str(r.task), str(r.metric), f"{r.base_value:.4g}", f"{r.variant_value:.4g}",
            _pct(r.rel_drift_pct), _ci(r.ci_low, r.ci_high),
            "" if pd.isna(r.n_10) else f"{int(r.n_10)} / {int(r.n_01)}",
            "" if pd.isna(r.forgetting_adj) else f"{_share(r.forgetting_adj)} / {_share(r.backward_transfer_adj)}",
            "" if pd.isna(r.q_value) else f"{r.q_value:.3g}", significant,
        ])
    header = ["task", "metric", "base", "variant", "drift", "95% CI", "1→0 / 0→1",
              "F_adj / BT_adj", "q (McNemar, BH)", "q < 0.05"]
    return ["### Per task", "", *_table(header, rows), ""]
