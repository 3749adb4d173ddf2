"""report.md: what drifted, per variant, capability and task, and what is more than noise."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from captrack.analysis.comparison import Comparison
from captrack.analysis.verdicts import VERDICTS
from captrack.report.escape import md_code, md_text
from captrack.report.findings import ranking_sentence
from captrack.report.numbers import ci_text, is_significant, missing, plain, signed, verdict_text
from captrack.report.power_hint import HINT_HEADER, task_hints
from captrack.report.verdict_cells import (
    GATE_RULE,
    RELATIVE_COLUMN,
    SIGNIFICANCE,
    VERDICT_RULE,
    capability_units,
    mark,
)
from captrack.taxonomy import Taxonomy

__all__ = ["AGGREGATE_ONLY", "md_text", "render_report"]

AGGREGATE_ONLY = ("Aggregate scores only: there is no per-item data, so no confidence intervals, no item "
                  "transitions (F/BT), no minimum detectable effects and no ranking of algorithms can be computed. "
                  "None of these drifts can be told apart from noise: each number is a point estimate of unknown precision.")


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks inside it (a path or label cannot close it early)."""
    runs = [len(m) for line in lines for m in re.findall(r"`+", line)]
    return "`" * max(3, max(runs, default=0) + 1)


def _pct(value: Any, with_sign: bool = True) -> str:
    return signed(value, suffix="%") if with_sign else plain(value, suffix="%")


def _share(value: Any) -> str:
    return "n/a" if missing(value) else plain(100 * float(value), suffix="%")


def _unit(row: Any) -> str:
    found = row.get("change_unit") if hasattr(row, "get") else None
    return str(found) if isinstance(found, str) and found else "points"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def render_report(comparison: Comparison, taxonomy: Taxonomy, inputs: dict[str, Any]) -> str:
    """Render the comparison as Markdown for people: summary first, details after."""
    lines = [f"# captrack comparison against {md_text(comparison.base, table=False)}", ""]
    relative = ("Relative drift is CapTrack's 100·(variant − base)/base per metric, averaged per capability "
                "(± is the spread across member metrics)")
    if comparison.aggregate_only:
        lines += [relative + ".", "", AGGREGATE_ONLY, ""]
    else:
        lines += [f"Margin ±{comparison.margin:g}. {VERDICT_RULE}", "", SIGNIFICANCE, "", GATE_RULE, "",
                  f"{relative}: shown in its own column for comparison with CapTrack, it decides nothing. MDE: the "
                  "smallest relative drift this many items detect with 80% power, planned with the verdict's own test "
                  "from n and the base rate under independent outcomes (a worst case; see power.csv and "
                  "captrack's docs/statistics.md). F = share of items forgotten (1→0), BT = share "
                  "gained (0→1).", ""]
    for variant in comparison.variants:
        lines += _variant_section(comparison, taxonomy, variant.name, variant.algorithm)
    lines += _ranking_section(comparison)
    lines += _distribution_section(comparison)
    lines += _judged_section(comparison)
    if comparison.warnings:
        lines += ["## Warnings", ""] + [f"- {md_text(w, table=False)}" for w in comparison.warnings] + [""]
    shown = [f"{k}: {v}" for k, v in inputs.items()]
    fence = _fence(shown)
    lines += ["## Inputs", "", fence, *shown, fence, ""]
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
             "BC is the Bhattacharyya overlap of base and variant option distributions (1 = identical); *mass retained* "
             "is the mean probability the variant still gives the base's answer (1 = kept whole). Here *drift* is the "
             "mixture paper's sense (an answer that kept its mass and lost a near tie), not the relative drift (%) of "
             "the tables above.", ""]
    rows = [[md_text(r.variant), md_text(r.task), str(int(r.n_forgotten)), str(int(r.n_collapse)), str(int(r.n_drift)),
             str(int(r.n_shift)), str(int(r.n_eroding)), f"{r.mean_bc:.3f}", f"{r.mean_mass_retained:.3f}"]
            for r in dist.itertuples()]
    lines += [*_table(["variant", "task", "forgotten", "collapse", "drift", "shift", "eroding", "mean BC", "mass retained"], rows), ""]
    calib = comparison.calibration
    if not calib.empty:
        rows = [[md_text(r.variant), md_text(r.task), f"{r.ece_base:.3f}", f"{r.ece_variant:.3f}", _ci_plain(r.ece_change_ci_low, r.ece_change_ci_high),
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
                rows.append([md_text(model), md_text(task), md_text(metric), md_text(t["judge"]), md_text(t["prompt"]),
                             str(t["n"]), str(t["nan"]), reasons])
    intro = ("Scored by an LLM judge (`captrack judge`). A verdict the judge did not give or that could not be "
             "parsed is NaN (never a default score) and is left out of pairing; reasons by code.")
    header = ["model", "task", "metric", "judge", "prompt", "verdicts", "NaN", "NaN reasons"]
    return ["## Judged metrics", "", intro, "", *_table(header, rows), ""]


def _ci_plain(low: Any, high: Any) -> str:
    return ci_text(low, high, digits=3)


def _variant_section(comparison: Comparison, taxonomy: Taxonomy, name: str, algorithm: str) -> list[str]:
    caps = comparison.capabilities[comparison.capabilities["variant"] == name]
    title = f"## {md_text(name, table=False)}" + (f" ({md_text(algorithm, table=False)})" if algorithm else "")
    lines = [title, ""]
    units = capability_units(comparison.drift)
    lines += _headlines(comparison, taxonomy, name, units)
    groups = caps[caps["level"] == "group"].set_index("key")
    if comparison.aggregate_only:
        lines.append("Groups (relative drift): " + ", ".join(f"{g} {_pct(groups.loc[g, 'mean_rel_drift_pct'])}"
                                                             for g in groups.index) + ".")
    else:
        shown = [f"{g} {_verdict_cell(groups.loc[g], comparison.margin, units.get((name, str(g)), 'points')) or 'n/a'}"
                 for g in groups.index]
        lines.append("Groups (Δ, + better): " + "; ".join(shown) + ".")
    lines.append("")
    lines += _verdict_lines(caps, comparison.margin)
    rows = []
    by_key = caps[caps["level"] == "capability"].set_index("key")
    items = _capability_items(comparison, name)
    for cap in taxonomy.capabilities:
        if cap.key not in by_key.index:
            continue
        row = by_key.loc[cap.key]
        if row["n_metrics"] == 0:
            continue
        cells = [f"{cap.key} {cap.name}"]
        if not comparison.aggregate_only:
            cells += [_value(row["base_value"]), _value(row["variant_value"]),
                      _verdict_cell(row, comparison.margin, units.get((name, cap.key), "points")), mark(row.get("verdict"))]
        cells += [_pct(row["mean_rel_drift_pct"]), _pct(row["std_rel_drift_pct"], with_sign=False)]
        if not comparison.aggregate_only:
            cells += [_pct(row["mde_pct"], with_sign=False), _share(row["forgetting"]), _share(row["backward_transfer"])]
        rows.append([*cells, str(int(row["n_metrics"])), items.get(cap.key, "n/a")])
    header = ["capability"]
    if not comparison.aggregate_only:
        header += ["base", "variant", f"Δ (+ better) [95% CI] → verdict at ±{comparison.margin:g}", "*"]
    header += [RELATIVE_COLUMN, "±"]
    if not comparison.aggregate_only:
        header += ["MDE (% of base)", "F", "BT"]
    lines += [*_table([*header, "metrics", "items (n)"], rows), ""]
    lines += _task_table(comparison, name)
    lines += _unmapped_section(comparison, name)
    return lines


def _value(value: Any) -> str:
    return "n/a" if missing(value) else f"{float(value):.4g}"


def _flips(r: Any) -> str:
    """'3 / 1 / 2' (harmful, beneficial, answer churn; '–' where the metric reads no answer), and with several
    seeds the counts every seed agrees on: '3 / 1 / 2 (all 2 seeds: 1 / 0)'."""
    if pd.isna(r.n_10):
        return ""
    churn = "–" if pd.isna(r.answer_churn) else str(int(r.answer_churn))
    text = f"{int(r.n_10)} / {int(r.n_01)} / {churn}"
    if not pd.isna(r.n_replicates) and int(r.n_replicates) > 1:
        text += f" (all {int(r.n_replicates)} seeds: {int(r.n_10_all_seeds)} / {int(r.n_01_all_seeds)})"
    return text


def _verdict_cell(row: Any, margin: float, unit: str | None = None) -> str:
    """'-4.2 points [-6.1, -2.3] → regressed at ±5' (Δ oriented, + is better), or '' without a verdict."""
    found = row.get("verdict") if hasattr(row, "get") else None
    return verdict_text(row["oriented_change"], row["change_ci_low"], row["change_ci_high"], unit or _unit(row), found, margin)


def _verdict_lines(caps: pd.DataFrame, margin: float) -> list[str]:
    """One sentence naming the capabilities under each verdict."""
    rows = caps[(caps["level"] == "capability") & caps["verdict"].isin(VERDICTS)] if "verdict" in caps else caps[:0]
    if rows.empty:
        return []
    parts = [f"{v}: {', '.join(str(k) for k in rows.loc[rows['verdict'] == v, 'key'])}"
             for v in VERDICTS if (rows["verdict"] == v).any()]
    return [f"Verdicts at margin ±{margin:g}: " + "; ".join(parts) + ".", ""]


def _capability_items(comparison: Comparison, name: str) -> dict[str, str]:
    """Per capability: the paired items behind it (summed over its member tasks), as text."""
    power = comparison.power[comparison.power["variant"] == name].drop_duplicates(["task", "metric"])
    drift = comparison.drift[(comparison.drift["variant"] == name) & comparison.drift["rel_drift_pct"].notna()]
    merged = drift.merge(power[["task", "metric", "n"]], on=["task", "metric"])
    return {str(cap): str(int(frame.drop_duplicates("task")["n"].sum()))
            for cap, frame in merged.groupby("capability") if cap}


def _ranking_section(comparison: Comparison) -> list[str]:
    """Algorithms ranked by mean |relative drift| only where the paired bootstrap CI of the difference excludes 0."""
    if comparison.aggregate_only or comparison.contrasts.empty:
        return []
    rows, said = [], []
    for r in comparison.contrasts.itertuples():
        rows.append([f"{md_text(r.algorithm_a)} − {md_text(r.algorithm_b)}", f"{r.mean_abs_drift_a:.1f}% − {r.mean_abs_drift_b:.1f}%",
                     _pct(r.difference), ci_text(r.ci_low, r.ci_high), str(int(r.n_capabilities))])
        said.append(ranking_sentence(r.algorithm_a, r.algorithm_b, r.difference, r.ci_low, r.ci_high))
    intro = ("Mean |relative drift| per algorithm (over its variants and the capabilities all variants have; rises and "
             "falls alike, so it measures movement, not forgetting), and the paired bootstrap 95% CI of the difference. "
             "An algorithm is said to move its capabilities more only where that CI excludes 0.")
    header = ["algorithms", "mean \\|relative drift\\|", "difference", "95% CI", "capabilities"]
    return ["## Ranking algorithms", "", intro, "", *_table(header, rows), "", *(f"- {md_text(s, table=False)}" for s in said), ""]

def _unmapped_section(comparison: Comparison, name: str) -> list[str]:
    """Tasks outside the taxonomy: analysed item by item, in no capability aggregate."""
    drift = comparison.drift[(comparison.drift["variant"] == name) & (comparison.drift["capability"].fillna("") == "")]
    if drift.empty:
        return []
    shown = ", ".join(md_code(f"{t}/{m}") for t, m in sorted(set(zip(drift["task"], drift["metric"], strict=True))))
    return ["### Unmapped tasks", "",
            f"Not in the taxonomy, so in no capability aggregate: {shown}. Their transitions and drift are in "
            "the per-task table above and in transitions.csv / drift.csv; map them to capabilities with "
            "`captrack compare --taxonomy EXTRA.yaml` (the schema of taxonomy/captrack.yaml).", ""]


def _headlines(comparison: Comparison, taxonomy: Taxonomy, name: str, units: dict[tuple[str, str], str]) -> list[str]:
    """Two or three sentences: the largest capability changes with their verdicts, and the item-level evidence."""
    caps = comparison.capabilities
    rows = caps[(caps["variant"] == name) & (caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    if rows.empty:
        return ["No capability could be measured (no tracked metric with a non-zero base).", ""]
    if comparison.aggregate_only:
        top = rows.reindex(rows["mean_rel_drift_pct"].abs().sort_values(ascending=False).index).head(3)
        parts = [f"{r.key} {taxonomy.capability(str(r.key)).name} {_pct(r.mean_rel_drift_pct)}" for r in top.itertuples()]
        return ["Largest relative drifts (no CI: aggregate scores only): " + "; ".join(parts) + ".", ""]
    judged = rows[rows["oriented_change"].notna()] if "oriented_change" in rows else rows[:0]
    top = judged.reindex(judged["oriented_change"].abs().sort_values(ascending=False, kind="stable").index).head(3)
    parts = [f"{r['key']} {taxonomy.capability(str(r['key'])).name} "
             f"{_verdict_cell(r, comparison.margin, units.get((name, str(r['key'])), 'points')) or 'no verdict'}"
             for _, r in top.iterrows()]
    trans = comparison.transitions[comparison.transitions["variant"] == name].drop_duplicates(["task", "metric"])
    forgotten, gained = int(trans["n_10"].sum()), int(trans["n_01"].sum())
    drift = comparison.drift[comparison.drift["variant"] == name].drop_duplicates(["task", "metric"])
    verdicts = [v for v in drift["verdict"] if isinstance(v, str) and v] if "verdict" in drift else []
    significant = sum(is_significant(v) for v in verdicts)
    return [
        "Largest changes (Δ, + better): " + ("; ".join(parts) if parts else "none with a verdict") + ".",
        f"Items forgotten (1→0): {forgotten}; gained (0→1): {gained}; "
        f"significant tasks (verdict regressed, improved or changed): {significant} of {len(verdicts)}.",
        "",
    ]


def _task_table(comparison: Comparison, name: str) -> list[str]:
    drift = comparison.drift[comparison.drift["variant"] == name].drop_duplicates(["task", "metric"])
    if comparison.aggregate_only:
        rows = [[str(r.task), str(r.metric), f"{r.base_value:.4g}", f"{r.variant_value:.4g}", "n/a", _pct(r.rel_drift_pct)]
                for r in drift.sort_values(["task", "metric"]).itertuples()]
        return ["### Per task", "", *_table(["task", "metric", "base", "variant", "n", RELATIVE_COLUMN], rows), ""]
    trans = comparison.transitions[comparison.transitions["variant"] == name].drop_duplicates(["task", "metric"])
    power = comparison.power[comparison.power["variant"] == name].reindex(columns=["task", "metric", "n", "kind", "sd_diff",
                                                                                   "mde_abs", "mde_pct"])
    merged = drift.merge(trans, on=["task", "metric"], how="left", suffixes=("", "_t"))
    merged = merged.drop(columns=["n"], errors="ignore").merge(power, on=["task", "metric"], how="left")
    rows = []
    merged = merged.sort_values(["task", "metric"])
    for r, hint in zip(merged.itertuples(), task_hints(merged, comparison.margin), strict=True):
        row = r._asdict()
        rows.append([
            md_text(r.task), md_text(r.metric), f"{r.base_value:.4g}", f"{r.variant_value:.4g}",
            "n/a" if pd.isna(r.n) else str(int(r.n)), _verdict_cell(row, comparison.margin), mark(row.get("verdict")), hint,
            _pct(r.rel_drift_pct),
            _flips(r),
            "" if pd.isna(r.forgetting_adj) else f"{_share(r.forgetting_adj)} / {_share(r.backward_transfer_adj)}",
            "" if pd.isna(r.q_value) else f"{r.q_value:.3g}",
        ])
    header = ["task", "metric", "base", "variant", "n", f"Δ (+ better) [95% CI] → verdict at ±{comparison.margin:g}", "*",
              HINT_HEADER, RELATIVE_COLUMN, "harmful 1→0 / beneficial 0→1 / churn", "F_adj / BT_adj", "q (BH over the verdicts' p)"]
    return ["### Per task", "", *_table(header, rows), ""]
