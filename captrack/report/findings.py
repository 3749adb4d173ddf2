"""The leaderboard's short text: what drifted, per variant and per algorithm, in plain sentences.

Every sentence is computed from the capability table (relative drift with its bootstrap CI), the
checkpoint table (chance-adjusted forgetting F_adj and backward transfer BT_adj) and the algorithm
contrasts (captrack.analysis.ranking: a paired bootstrap CI on the difference of mean |drift|). A drift
counts as "beyond noise" only when its 95% CI exists and excludes zero; algorithms are ranked only
where the CI of their difference excludes zero; aggregate-only sources get no such words at all.
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["EXPECTATION", "findings", "measure_sentence", "ranking_sentence", "target_sentences", "verdict_sentences"]

MEASURES = {"f_adj": ("chance-adjusted forgetting F_adj", 100.0, "points"),
            "one_minus_bc": ("option-distribution movement 1 − BC", 100.0, "points")}

EXPECTATION = ("published expectation (CapTrack; Balasubramanian & Kasiviswanathan 2026): SFT drifts most, "
               "preference optimisation (DPO) and RL are more conservative")


def _pct(value: float) -> str:
    return f"{value:+.1f}%"


def _clear(rows: pd.DataFrame) -> pd.DataFrame:
    """Capabilities whose drift CI excludes zero."""
    return rows[(rows["ci_low"] > 0) | (rows["ci_high"] < 0)]


def _variant_sentence(name: str, algorithm: str, rows: pd.DataFrame, point: pd.Series | None, aggregate_only: bool) -> str:
    scored = rows.dropna(subset=["mean_rel_drift_pct"])
    if scored.empty:
        return f"{name} ({algorithm or 'no algorithm'}): no capability could be scored."
    text = (f"{name} ({algorithm or 'no algorithm'}): mean |drift| {scored['mean_rel_drift_pct'].abs().mean():.1f}% "
            f"over {len(scored)} capabilities")
    with_ci = scored.dropna(subset=["ci_low", "ci_high"])
    if aggregate_only or with_ci.empty:
        reason = "aggregate scores only" if aggregate_only else "no bootstrap"
        return text + f"; no confidence intervals ({reason}), so no drift can be told apart from noise."
    clear = _clear(with_ci)
    drops, rises = clear[clear["mean_rel_drift_pct"] < 0], clear[clear["mean_rel_drift_pct"] > 0]
    text += f"; {len(drops)} fell and {len(rises)} rose beyond noise (a 95% CI that excludes 0)"
    if len(with_ci) < len(scored):
        text += f", {len(scored) - len(with_ci)} without a CI"
    if not drops.empty:
        worst = drops.loc[drops["mean_rel_drift_pct"].idxmin()]
        text += f"; largest fall {worst['key']} {_pct(worst['mean_rel_drift_pct'])}"
    if not rises.empty:
        best = rises.loc[rises["mean_rel_drift_pct"].idxmax()]
        text += f"; largest rise {best['key']} {_pct(best['mean_rel_drift_pct'])}"
    if point is not None and not math.isnan(float(point["forgetting_adj"])):
        text += (f"; F_adj {100 * float(point['forgetting_adj']):.1f}% of items forgotten vs "
                 f"BT_adj {100 * float(point['backward_transfer_adj']):.1f}% gained")
    return text + "."


def ranking_sentence(a: str, b: str, difference: float, low: float, high: float) -> str:
    """Whether the data rank algorithm `a` against `b` by mean |drift| (only a CI that excludes 0 ranks them)."""
    if any(math.isnan(float(x)) for x in (difference, low, high)):
        return f"The data cannot rank {a} and {b}: there is no confidence interval for their difference."
    if low > 0 or high < 0:
        more, less = (a, b) if difference > 0 else (b, a)
        return (f"{more} drifts more than {less}: mean |drift| {abs(difference):.1f} points higher "
                f"(95% CI of {a} − {b} [{low:+.1f}, {high:+.1f}] excludes 0).")
    return (f"The data cannot rank {a} and {b}: mean |drift| {a} − {b} = {difference:+.1f} points, "
            f"95% CI [{low:+.1f}, {high:+.1f}] includes 0.")


def measure_sentence(a: str, b: str, measure: str, difference: float, low: float, high: float) -> str | None:
    """An ordering of `a` and `b` by an item-level measure (F_adj, 1 − BC) only where its CI excludes 0; None without a value."""
    label, scale, unit = MEASURES[measure]
    if any(math.isnan(float(x)) for x in (difference, low, high)):
        return None
    d, lo, hi = scale * difference, scale * low, scale * high
    if lo > 0 or hi < 0:
        more, less = (a, b) if d > 0 else (b, a)
        return (f"{more} has more {label} than {less}: {abs(d):.1f} {unit} (95% CI of {a} − {b} "
                f"[{lo:+.1f}, {hi:+.1f}] excludes 0).")
    return f"The data cannot order {a} and {b} by {label}: {a} − {b} = {d:+.1f} {unit}, 95% CI [{lo:+.1f}, {hi:+.1f}] includes 0."


def _measure_sentences(contrasts: pd.DataFrame) -> list[str]:
    out = []
    for measure in MEASURES:
        if f"{measure}_difference" not in contrasts:
            continue
        for r in contrasts.to_dict("records"):
            said = measure_sentence(str(r["algorithm_a"]), str(r["algorithm_b"]), measure, float(r[f"{measure}_difference"]),
                                    float(r[f"{measure}_ci_low"]), float(r[f"{measure}_ci_high"]))
            if said:
                out.append(said)
    return out


def _expectation_sentence(contrasts: pd.DataFrame) -> str | None:
    """Whether SFT's contrasts test the published expectation: it needs a CI that excludes 0 against every other algorithm."""
    rows = contrasts[(contrasts["algorithm_a"] == "SFT") | (contrasts["algorithm_b"] == "SFT")]
    if rows.empty:
        return None
    verdicts = []
    for r in rows.itertuples():
        sign = 1.0 if r.algorithm_a == "SFT" else -1.0
        low, high = sorted((sign * float(r.ci_low), sign * float(r.ci_high)))
        verdicts.append("more" if low > 0 else "less" if high < 0 else "unknown")
    if all(v == "more" for v in verdicts):
        return f"SFT drifts more than every other algorithm here with CIs that exclude 0: this agrees with the {EXPECTATION}."
    if "less" in verdicts:
        return f"SFT drifts less than another algorithm with a CI that excludes 0: this contradicts the {EXPECTATION}."
    return (f"The data cannot test the {EXPECTATION}, because not every difference between SFT and another algorithm "
            "has a CI that excludes 0.")


def findings(caps: pd.DataFrame, checkpoints: pd.DataFrame, contrasts: pd.DataFrame | None = None,
             aggregate_only: bool = False) -> list[str]:
    """Sentences saying what drifted: one per variant, then what the data say about ranking algorithms.

    Args:
        caps: the leaderboard's capability table (level, key, variant, algorithm, mean_rel_drift_pct,
            ci_low, ci_high).
        checkpoints: the leaderboard's checkpoint table (variant, forgetting_adj, backward_transfer_adj).
        contrasts: algorithm contrasts (captrack.analysis.ranking.CONTRAST_COLUMNS); None or empty: no CI
            on any difference, so algorithms are not ranked.
        aggregate_only: the numbers are aggregate scores (no items): no CI, so no claim beyond the point values.
    """
    capability_rows = caps[caps["level"] == "capability"]
    points = checkpoints.set_index("variant") if not checkpoints.empty else pd.DataFrame()
    sentences = []
    for name, rows in capability_rows.groupby("variant", sort=False):
        algorithm = str(rows["algorithm"].iloc[0] or "")
        point = points.loc[name] if name in points.index else None
        sentences.append(_variant_sentence(str(name), algorithm, rows, point, aggregate_only))
    algorithms = {str(a) for a in capability_rows["algorithm"] if a}
    if len(algorithms) < 2:
        return sentences
    if aggregate_only or contrasts is None or contrasts.empty:
        sentences.append(f"The data cannot rank the algorithms ({', '.join(sorted(algorithms))}): "
                         "there is no confidence interval on any difference between them"
                         + (" (aggregate scores only)." if aggregate_only else "."))
        return sentences
    sentences += [ranking_sentence(r.algorithm_a, r.algorithm_b, r.difference, r.ci_low, r.ci_high)
                  for r in contrasts.itertuples()]
    sentences += _measure_sentences(contrasts)
    expectation = _expectation_sentence(contrasts)
    if expectation:
        sentences.append(expectation)
    return sentences


def target_sentences(drift: pd.DataFrame, target: str) -> list[str]:
    """Per variant, the change of the post-training's target task (each metric): base → variant, relative
    change with its 95% CI, and whether that CI excludes 0; a variant without the target says so."""
    rows = drift[drift["task"] == target]
    out = []
    for variant in dict.fromkeys(str(v) for v in drift["variant"]):
        mine = rows[rows["variant"] == variant]
        if mine.empty:
            out.append(f"Target {target} was not evaluated for {variant}: its post-training cannot be checked.")
            continue
        for r in mine.to_dict("records"):
            low, high = float(r["ci_low"]), float(r["ci_high"])
            head = (f"Target {target}/{r['metric']} for {variant}: {float(r['base_value']):.3f} → "
                    f"{float(r['variant_value']):.3f} ({_pct(float(r['rel_drift_pct']))}")
            if math.isnan(low) or math.isnan(high):
                out.append(f"{head}, no CI): the data cannot say whether the post-training moved its target.")
            elif low > 0 or high < 0:
                out.append(f"{head}, 95% CI [{low:+.1f}, {high:+.1f}] excludes 0): the post-training moved its target.")
            else:
                out.append(f"{head}, 95% CI [{low:+.1f}, {high:+.1f}] includes 0): the post-training did NOT "
                           "measurably move its target.")
    return out


def verdict_sentences(caps: pd.DataFrame, margin: float) -> list[str]:
    """Per variant, the capabilities under each verdict at `margin` (none for boards without verdicts)."""
    if "verdict" not in caps:
        return []
    rows = caps[(caps["level"] == "capability") & caps["verdict"].isin(
        ["regressed", "improved", "equivalent", "inconclusive", "changed"])]
    out = []
    for variant, frame in rows.groupby("variant", sort=False):
        parts = [f"{v} {', '.join(str(k) for k in frame.loc[frame['verdict'] == v, 'key'])}"
                 for v in ("regressed", "improved", "equivalent", "changed", "inconclusive") if (frame["verdict"] == v).any()]
        out.append(f"{variant}, verdicts at margin ±{margin:g} (paired 95%/90% CIs of the oriented change): "
                   + "; ".join(parts) + ".")
    return out
