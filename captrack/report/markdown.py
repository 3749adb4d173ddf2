"""report.md: what drifted, per variant, capability and task, and what is more than noise."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from captrack.analysis.compare import Comparison
from captrack.analysis.verdicts import VERDICTS
from captrack.report.escape import md_code, md_text
from captrack.report.findings import ranking_sentence
from captrack.taxonomy import Taxonomy

__all__ = ["AGGREGATE_ONLY", "ZERO_WIDTH", "md_text", "render_report", "zero_width"]

AGGREGATE_ONLY = ("Aggregate scores only: there is no per-item data, so no confidence intervals, no item "
                  "transitions (F/BT), no minimum detectable effects and no ranking of algorithms can be computed. "
                  "None of these drifts can be told apart from noise: each number is a point estimate of unknown precision.")


def _fence(lines: list[str]) -> str:
    """A code fence longer than any run of backticks inside it (a path or label cannot close it early)."""
    runs = [len(m) for line in lines for m in re.findall(r"`+", line)]
    return "`" * max(3, max(runs, default=0) + 1)


def _pct(value: Any, signed: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:+.1f}%" if signed else f"{value:.1f}%"


def _share(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{100 * value:.1f}%"


ZERO_WIDTH = "no change in any item: a CI of width 0 is no certainty"
"""Shown instead of "[+0.0, +0.0]": where no paired item changed, every bootstrap resample gives the same value."""


def zero_width(low: Any, high: Any) -> bool:
    """Whether a CI has no width (every resample gave one value, e.g. no item flipped)."""
    return not any(isinstance(x, float) and math.isnan(x) for x in (low, high)) and low == high


def _ci(low: Any, high: Any) -> str:
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return ""
    if zero_width(low, high):
        return f"({ZERO_WIDTH})"
    mark = " *" if low > 0 or high < 0 else ""
    return f"[{low:+.1f}, {high:+.1f}]{mark}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def render_report(comparison: Comparison, taxonomy: Taxonomy, inputs: dict[str, Any]) -> str:
    """Render the comparison as Markdown for people: summary first, details after."""
    lines = [f"# captrack comparison against {md_text(comparison.base, table=False)}", ""]
    lines += [
        "Relative drift is CapTrack's 100·(variant − base)/base per metric, averaged per capability "
        "(± is the spread across member metrics).",
        "",
        AGGREGATE_ONLY if comparison.aggregate_only else
        "CI: paired bootstrap over items; `*` marks a CI that excludes 0 (\"beyond noise\"), and nothing else is "
        "called a change. MDE: the smallest relative drift this many items detect with 80% power (two-sided "
        "α = 0.05, paired; planned from n and the base rate, see README's Definitions). "
        "F = share of items forgotten (1→0), BT = share gained (0→1).",
        "",
        *([] if comparison.aggregate_only else [
            f"Verdict (margin ±{comparison.margin:g}): the change Δ, oriented so that + is better (points for "
            "binary and score metrics, % of the base mean for counts), is `regressed` where its 95% CI lies below 0, "
            "`improved` where it lies above 0, `equivalent` where its 90% CI lies inside ±margin (two one-sided "
            "tests), else `inconclusive`; neutral metrics are `changed` where the 95% CI excludes 0. CI: adjusted "
            "Wald (Agresti–Min) on the paired items; see README's Definitions.", ""]),
    ]
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
    if any(isinstance(x, float) and math.isnan(x) for x in (low, high)):
        return "n/a"
    return f"[{low:+.3f}, {high:+.3f}]"


def _variant_section(comparison: Comparison, taxonomy: Taxonomy, name: str, algorithm: str) -> list[str]:
    caps = comparison.capabilities[comparison.capabilities["variant"] == name]
    title = f"## {md_text(name, table=False)}" + (f" ({md_text(algorithm, table=False)})" if algorithm else "")
    lines = [title, ""]
    lines += _headlines(comparison, taxonomy, name)
    groups = caps[caps["level"] == "group"].set_index("key")
    lines.append(
        "Groups: " + ", ".join(f"{g} {_pct(groups.loc[g, 'mean_rel_drift_pct'])}" for g in groups.index) + "."
    )
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
        cells = [f"{cap.key} {cap.name}", _pct(row["mean_rel_drift_pct"]), _pct(row["std_rel_drift_pct"], signed=False)]
        if not comparison.aggregate_only:
            cells += [_ci(row["ci_low"], row["ci_high"]), _pct(row["mde_pct"], signed=False),
                      _share(row["forgetting"]), _share(row["backward_transfer"]), _verdict_cell(row)]
        rows.append([*cells, str(int(row["n_metrics"])), items.get(cap.key, "n/a")])
    header = ["capability", "drift", "±"]
    if not comparison.aggregate_only:
        header += ["95% CI", "MDE", "F", "BT", "verdict: Δ [95% CI]"]
    lines += [*_table([*header, "metrics", "items (n)"], rows), ""]
    lines += _task_table(comparison, name)
    lines += _unmapped_section(comparison, name)
    return lines


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


def _verdict_cell(row: Any) -> str:
    """'regressed: −4.2 [−6.1, −2.3]' (Δ oriented, + is better), or '' without a verdict."""
    found = row.get("verdict") if hasattr(row, "get") else None
    if not isinstance(found, str) or not found:
        return ""
    return f"{found}: {row['oriented_change']:+.1f} [{row['change_ci_low']:+.1f}, {row['change_ci_high']:+.1f}]"


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
    """Algorithms ranked by mean |capability drift| only where the paired bootstrap CI of the difference excludes 0."""
    if comparison.aggregate_only or comparison.contrasts.empty:
        return []
    rows, said = [], []
    for r in comparison.contrasts.itertuples():
        rows.append([f"{md_text(r.algorithm_a)} − {md_text(r.algorithm_b)}", f"{r.mean_abs_drift_a:.1f}% − {r.mean_abs_drift_b:.1f}%",
                     _pct(r.difference), _ci(r.ci_low, r.ci_high) or "n/a", str(int(r.n_capabilities))])
        said.append(ranking_sentence(r.algorithm_a, r.algorithm_b, r.difference, r.ci_low, r.ci_high))
    intro = ("Mean |capability drift| per algorithm (over its variants and the capabilities all variants have), "
             "and the paired bootstrap 95% CI of the difference. An algorithm is said to drift more only where that CI excludes 0.")
    header = ["algorithms", "mean |drift|", "difference", "95% CI", "capabilities"]
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


def _headlines(comparison: Comparison, taxonomy: Taxonomy, name: str) -> list[str]:
    """Two or three sentences: the largest capability drifts and the item-level evidence."""
    caps = comparison.capabilities
    rows = caps[(caps["variant"] == name) & (caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    if rows.empty:
        return ["No capability could be measured (no tracked metric with a non-zero base).", ""]
    top = rows.reindex(rows["mean_rel_drift_pct"].abs().sort_values(ascending=False).index).head(3)
    parts = []
    for r in top.itertuples():
        if math.isnan(r.ci_low) or math.isnan(r.ci_high):
            sure = "no CI"
        else:
            sure = "CI excludes 0" if (r.ci_low > 0 or r.ci_high < 0) else "CI includes 0: within noise"
        parts.append(f"{r.key} {taxonomy.capability(str(r.key)).name} {_pct(r.mean_rel_drift_pct)} ({sure})")
    if comparison.aggregate_only:
        return ["Largest drifts: " + "; ".join(parts) + ".", ""]
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
    if comparison.aggregate_only:
        rows = [[str(r.task), str(r.metric), f"{r.base_value:.4g}", f"{r.variant_value:.4g}", "n/a", _pct(r.rel_drift_pct)]
                for r in drift.sort_values(["task", "metric"]).itertuples()]
        return ["### Per task", "", *_table(["task", "metric", "base", "variant", "n", "drift"], rows), ""]
    trans = comparison.transitions[comparison.transitions["variant"] == name].drop_duplicates(["task", "metric"])
    power = comparison.power[comparison.power["variant"] == name][["task", "metric", "n", "mde_pct"]]
    merged = drift.merge(trans, on=["task", "metric"], how="left", suffixes=("", "_t"))
    merged = merged.drop(columns=["n"], errors="ignore").merge(power, on=["task", "metric"], how="left")
    rows = []
    for r in merged.sort_values(["task", "metric"]).itertuples():
        significant = "yes" if isinstance(r.q_value, float) and r.q_value < 0.05 else ""
        rows.append([
            md_text(r.task), md_text(r.metric), f"{r.base_value:.4g}", f"{r.variant_value:.4g}",
            "n/a" if pd.isna(r.n) else str(int(r.n)), _pct(r.rel_drift_pct), _ci(r.ci_low, r.ci_high),
            _pct(r.mde_pct, signed=False),
            _flips(r),
            "" if pd.isna(r.forgetting_adj) else f"{_share(r.forgetting_adj)} / {_share(r.backward_transfer_adj)}",
            "" if pd.isna(r.q_value) else f"{r.q_value:.3g}", significant, _verdict_cell(r._asdict()),
        ])
    header = ["task", "metric", "base", "variant", "n", "drift", "95% CI", "MDE", "harmful 1→0 / beneficial 0→1 / churn",
              "F_adj / BT_adj", "q (McNemar, BH)", "q < 0.05", "verdict: Δ [95% CI]"]
    return ["### Per task", "", *_table(header, rows), ""]
