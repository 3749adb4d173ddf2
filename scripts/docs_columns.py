"""The output files for the docs' reference/outputs.md: each file's columns from the list its writer uses, and what
each column means. Files whose columns no single list holds (a board's checkpoints.csv and algorithms.csv, the
compatible tables, by_<field>.csv's field) are spelled here; tests/test_docs_site.py reads the headers captrack
really writes and fails on any column this page lacks."""

from __future__ import annotations

from typing import Any

__all__ = ["MEANINGS", "file_columns"]

MEANINGS: dict[str, str] = {
    "variant": "the variant's name (its model name in the store)",
    "base": "the base it is paired with",
    "algorithm": "the variant's algorithm label (SFT, DPO, RL, ...)",
    "family": "label", "size": "label", "data": "label",
    "task": "lm-eval task", "metric": "the task's metric",
    "capability": "capability key (C1 ... H6)", "group": "CAN, WILL or HOW",
    "level": "capability or group", "key": "the capability's or group's key",
    "direction": "higher, lower or neutral (which way is better)",
    "n": "paired items (pairs over seeds where there are replicates)",
    "n_11": "right before and after", "n_10": "harmful flips (right → wrong)",
    "n_01": "beneficial flips (wrong → right)", "n_00": "wrong before and after",
    "forgetting": "F = n_10 / N (a fraction)", "backward_transfer": "BT = n_01 / N (a fraction)",
    "k": "options per item (the most common k where items differ)",
    "forgetting_adj": "F_adj = max(F − E, 0), Harmon et al.'s published chance-adjusted form (clipped)",
    "backward_transfer_adj": "BT_adj = max(BT − E, 0) (clipped)",
    "mcnemar_p": "exact McNemar p-value, for reference (the sign-flip test over seeds with replicates)",
    "p_value": "two-sided p-value of the verdict's own test (the CI's)",
    "q_value": "Benjamini–Hochberg over p_value (q < 0.05 is always a verdict whose CI excludes 0)",
    "forgetting_excess": "F − E₀₀, unclipped", "backward_transfer_excess": "BT − E₀₀, unclipped",
    "forgetting_excess_ci_low": "95% Wald CI", "forgetting_excess_ci_high": "95% Wald CI",
    "backward_transfer_excess_ci_low": "95% Wald CI", "backward_transfer_excess_ci_high": "95% Wald CI",
    "floor_forgetting": "flips between two of the base's own seeds (empty with one seed)",
    "floor_backward_transfer": "flips between two of the base's own seeds (empty with one seed)",
    "answer_churn": "items whose scored answer changed while the score did not (empty for metrics that read the "
                    "whole response)",
    "n_replicates": "seeds paired", "n_10_all_seeds": "harmful flips every seed agrees on",
    "n_01_all_seeds": "beneficial flips every seed agrees on",
    "base_value": "the base's mean (capabilities.csv: the mean over the member metrics that have both, a summary "
                  "across scales, not a drift)",
    "variant_value": "the variant's mean (capabilities.csv: as base_value)", "value": "the variant's mean at this step",
    "rel_drift_pct": "relative drift, 100·(variant − base)/base: % of base",
    "oriented_drift_pct": "relative drift with + always better: % of base (capabilities.csv: the mean of the members'; "
                          "empty where no member has a better side)",
    "ci_low": "95% CI of the row's relative drift (% of base); in rankings.csv, of the difference",
    "ci_high": "95% CI of the row's relative drift (% of base); in rankings.csv, of the difference",
    "change_unit": "points, or % of base for count metrics: the unit of oriented_change and its CIs",
    "oriented_change": "the verdict's change Δ = variant − base, + is better, in change_unit (points); the heatmap's "
                       "colour",
    "change_ci_low": "95% CI of oriented_change", "change_ci_high": "95% CI of oriented_change",
    "change_ci90_low": "90% CI of oriented_change (the equivalence test)",
    "change_ci90_high": "90% CI of oriented_change (the equivalence test)",
    "verdict": "regressed, improved, equivalent, inconclusive or changed (see Statistics)",
    "change_method": "score, wald, stratified-score, cluster-robust or a hull of two",
    "mean_rel_drift_pct": "CapTrack's mean relative drift of the members: % of base",
    "std_rel_drift_pct": "population std of the members' relative drift: % of base",
    "n_metrics": "member metrics scored", "n_items": "paired items (each member task once)",
    "mde_pct": "minimum detectable effect (80% power) on the scale of relative drift: % of base (empty for aggregate "
               "scores)",
    "kind": "binary or score", "sd_diff": "SD of the per-item differences",
    "mde_abs": "minimum detectable change (80% power) in points", "assumption": "what the MDE was planned under",
    "discordance": "the assumed share of discordant items (--assume-discordance)",
    "mde_abs_at_discordance": "the MDE at that discordance, in points",
    "algorithm_a": "first algorithm", "algorithm_b": "second algorithm",
    "mean_abs_drift_a": "mean |capability drift| of a's variants: % of base",
    "mean_abs_drift_b": "mean |capability drift| of b's variants: % of base",
    "difference": "a − b, with a paired bootstrap CI (ci_low, ci_high)", "n_capabilities": "capabilities compared",
    "replicate": "the evaluation seed",
    "delta": "variant − base (a fraction)", "delta_ci_low": "paired bootstrap 95% CI", "delta_ci_high": "paired bootstrap 95% CI",
    "step": "training step", "since": "the step compared against (the base before the first)",
    "drift_pct": "relative drift at this step: % of base",
    "first_step_significant": ("the first step significant after control over K steps (windows of consecutive steps, max-T): "
                               "the earliest end of a window whose paired change of the items' mean over its "
                               "checkpoints clears the scan's critical value (family-wise 5%)"),
    "n_steps": "steps examined", "final_step": "the last step", "final_drift_pct": "drift at the last step: % of base",
    "trend_pct_per_step": "least-squares slope of drift over steps: % of base per step",
    "trend_ci_low": "95% CI of the slope", "trend_ci_high": "95% CI of the slope",
    "forgotten_regained": "items forgotten, then right again", "gained_lost": "items gained, then lost",
    "doc_id": "lm-eval's document index", "doc_hash": "lm-eval's document hash",
    "pattern": "forgotten_regained or gained_lost", "first_step": "the step it flipped",
    "later_step": "the step it flipped back", "change": "forgotten or gained",
    "CAN": "the group's mean oriented change (points)", "WILL": "the group's mean oriented change (points)",
    "HOW": "the group's mean oriented change (points)",
    "significant_tasks": "tasks whose verdict's CI excludes 0", "tasks": "tasks compared",
    "n_variants": "variants of the algorithm", "n_tasks": "tasks pooled",
    "ci_df": "algorithms.csv: degrees of freedom of the t quantile of the algorithm's CI (variants − 1; none below 3)",
    "between_se": "algorithms.csv: the between-variant term of the algorithm's CI (the variants' spread / √k)",
    "shared_se": "algorithms.csv: the shared base's term (the mean covariance of two variants' drifts over the joint "
                 "item bootstrap)",
    "ci_note": "algorithms.csv: how the algorithm's CI was made, or why there is none (fewer than 3 variants)",
    "aa_floor": "floor.csv: the A/A floor's name (the base evaluated twice by its own backend, apart in batch size)",
    "aa_floor_n": "floor.csv: items the floor's two runs both scored on this task",
    "aa_floor_forgetting": "floor.csv: share of items the backend alone flips 1→0 between the floor's two runs",
    "aa_floor_backward_transfer": "floor.csv: share of items the backend alone flips 0→1 between the floor's two runs",
    "within_aa_floor": "floor.csv: the variant forgets and gains no larger a share than the floor does on this task",
    "n_forgotten": "items forgotten (right → wrong)", "n_gained": "items gained (wrong → right)",
    "n_collapse": "forgotten items the variant gives almost no mass (Q[â] < 0.4/k): mass forgetting",
    "n_drift": "forgotten items where the base's answer keeps its mass and trails by a near tie",
    "n_shift": "forgotten items neither collapse nor drift: the base's answer clearly overtaken",
    "n_eroding": "unflipped items whose gold probability fell by more than the erosion threshold",
    "collapse_share": "share of forgotten items", "drift_share": "share of forgotten items",
    "shift_share": "share of forgotten items", "eroding_share": "share of items",
    "collapse_of_forgotten": "collapse among the forgotten",
    "mean_bc": "mean Bhattacharyya overlap of base and variant option distributions",
    "mean_mass_retained": "mean probability mass kept on the base's answer",
    "mean_gold_prob_change": "mean change of the gold option's probability",
    "FIELD": "the value of the document field given to --by (e.g. category)",
}


def _published_notes() -> dict[str, str]:
    from captrack.taxonomy import load_taxonomy

    return {label: f"{cap.key}'s mean relative drift over its members: % of base" for cap in load_taxonomy().capabilities
            for label in cap.facets.values()}


def _measure_notes() -> dict[str, str]:
    from captrack.analysis.contrasts import MEASURE_COLUMNS

    return {c: ("F_adj (binary task metrics both algorithms have)" if c.startswith("f_adj") else
                "1 − Bhattacharyya overlap of base and variant option distributions (multiple-choice items only)")
            + ": of a, of b, a − b and its paired bootstrap CI"
            for c in MEASURE_COLUMNS}


def file_columns() -> list[tuple[str, str, str, list[str], dict[str, str]]]:
    """(file, written by, one row per, its columns in order, meanings) for every table a comparison or board writes."""
    from captrack.analysis import distribution
    from captrack.analysis.board_floor import AGAINST_FLOOR_COLUMNS
    from captrack.analysis.board_summary import ALGORITHM_COLUMNS, CHECKPOINT_COLUMNS
    from captrack.analysis.by_field import GROUP_STAT_COLUMNS
    from captrack.analysis.comparison import REPLICATE_COLUMNS
    from captrack.analysis.contrasts import MEASURE_COLUMNS
    from captrack.analysis.curve_stats import CHURN_ITEM_COLUMNS, STEP_FLIP_COLUMNS, SUMMARY_COLUMNS
    from captrack.analysis.curves import CURVE_COLUMNS
    from captrack.analysis.power import POWER_COLUMNS
    from captrack.analysis.ranking import CONTRAST_COLUMNS
    from captrack.report.pair_tables import PAIR_COLUMNS
    from captrack.report.writer import CONTRACT_COLUMNS
    from captrack.taxonomy import load_taxonomy

    published = [label for cap in load_taxonomy().capabilities for label in cap.facets.values()]
    compare, board, both = "`captrack compare`", "a leaderboard", "`captrack compare` and a leaderboard"
    notes: dict[str, Any] = MEANINGS | _measure_notes() | _published_notes()
    rows: list[tuple[str, str, str, list[str]]] = [
        ("transitions.csv", both, "variant × binary (task, metric)", CONTRACT_COLUMNS["transitions.csv"]),
        ("drift.csv", both, "variant × (task, metric) × capability", CONTRACT_COLUMNS["drift.csv"]),
        ("capabilities.csv", both, "variant × capability or group", CONTRACT_COLUMNS["capabilities.csv"]),
        ("power.csv", both + " (items only)", "variant × (task, metric)", POWER_COLUMNS),
        ("rankings.csv", both + " (items only)", "pair of algorithms", [*CONTRAST_COLUMNS, *MEASURE_COLUMNS]),
        ("replicates.csv", compare, "variant × replicate × (task, metric)", REPLICATE_COLUMNS),
        ("captrack_compatible.csv", compare + " (CapTrack's published layout: each capability's mean relative drift)",
         "variant", ["variant", *published]),
        ("captrack_compatible_std.csv", compare + " (the same layout: the std across each capability's members)",
         "variant", ["variant", *published]),
        ("by_FIELD.csv", both + " (`--by FIELD`)", "variant × (task, metric) × value of FIELD",
         ["variant", "algorithm", "task", "metric", "FIELD", *GROUP_STAT_COLUMNS]),
        ("pairs.csv", board + " (items only)", "variant × binary (task, metric)", PAIR_COLUMNS),
        ("checkpoints.csv", board, "variant", CHECKPOINT_COLUMNS),
        ("algorithms.csv", board, "algorithm × capability or group", ALGORITHM_COLUMNS),
        ("floor.csv", board + " (with a `floor:`)", "variant × binary (task, metric) against its base's A/A floor",
         AGAINST_FLOOR_COLUMNS),
        ("curves.csv", both + " (trajectories)", "variant × step × (task, capability or group)", CURVE_COLUMNS),
        ("curve_summary.csv", both + " (trajectories)", "variant × capability", SUMMARY_COLUMNS),
        ("curve_items.csv", both + " (trajectories)", "item that churned", CHURN_ITEM_COLUMNS),
        ("step_flips.csv", both + " (trajectories)", "item that flipped at a step", STEP_FLIP_COLUMNS),
        ("distribution_items.csv", compare + " (multiple-choice items with option loglikelihoods)",
         "variant × item", distribution.ITEM_COLUMNS),
        ("distribution.csv", compare + " (multiple choice)", "variant × task", distribution.SUMMARY_COLUMNS),
        ("distribution_by_algorithm.csv", compare + " (multiple choice)", "algorithm",
         ["algorithm", "n_variants", "n_tasks", *distribution.COUNT_COLUMNS, *distribution.SHARE_COLUMNS,
          *distribution.MEAN_COLUMNS]),
        ("calibration.csv", compare + " (multiple choice)", "variant × task", distribution.CALIBRATION_COLUMNS),
    ]
    return [(name, where, per_row, list(columns), notes) for name, where, per_row, columns in rows]
