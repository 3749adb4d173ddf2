"""The leaderboard's short text: what changed, per variant and per algorithm, in plain sentences.

Every sentence reads the tables, never recomputes them: the capability table (each capability's
observed change Δ with its 95% CI and verdict at ± the margin; relative drift only where a source has
no items), the checkpoint table (chance-adjusted forgetting F_adj and backward transfer BT_adj) and the
algorithm contrasts (captrack.analysis.ranking: a paired bootstrap CI on the difference of mean
|relative drift|). A change is claimed only where a verdict says so: regressed or improved (or changed,
for a metric without a better side) means the 95% CI of Δ excludes 0, the one meaning of
"significant" on every page. An improvement is never called drift or forgetting: mean |relative
drift| is named as what it is, rises and falls alike. Algorithms are ranked only where the CI of
their difference excludes zero, and the published expectation names only algorithms the board has; where an
algorithm has one checkpoint, a sentence before them says that they compare checkpoints, not algorithms.
Aggregate-only sources get no such words at all, and neither does a smoke test (`captrack run --quick`):
a handful of items per task supports no ordering of algorithms and tests no published expectation.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping

import pandas as pd

from captrack.report.algorithm_notes import one_checkpoint_sentence, single_checkpoint_algorithms
from captrack.report.numbers import (
    change_text,
    ci_text,
    missing,
    signed,
    signed_change,
    verdict_text,
)

__all__ = ["RELATIVE", "SMOKE_SENTENCE", "expectation", "findings", "measure_sentence", "ranking_sentence", "target_sentences"]

SMOKE_SENTENCE = ("This board is a smoke test (`captrack run --quick`): it checks that every stage runs, on a few items "
                  "per task; it ranks no algorithms and tests no published expectation. Run the experiment without "
                  "--quick for results.")
"""What a smoke-test board says where a full board ranks algorithms."""

RELATIVE = "(difference of two relative drifts, each in % of base: CapTrack-compatible)"
"""The unit of a difference of mean |relative drift|: a relative quantity, never called points."""

MEASURES = {"f_adj": ("chance-adjusted forgetting F_adj", 100.0, "points"),
            "one_minus_bc": ("option-distribution movement 1 − BC", 100.0, "points")}

_PUBLISHED = {"DPO": "preference optimisation (DPO)", "RL": "RL"}
"""The algorithms the published expectation holds more conservative than SFT, as it names them."""


def expectation(algorithms: Collection[str]) -> str | None:
    """The published expectation about SFT, naming only the `algorithms` a board has (None without SFT or any of
    DPO and RL)."""
    others = [text for name, text in _PUBLISHED.items() if name in algorithms]
    if "SFT" not in algorithms or not others:
        return None
    verb = "are" if len(others) > 1 else "is"
    return ("published expectation (CapTrack; Balasubramanian & Kasiviswanathan 2026): SFT drifts most, "
            f"{' and '.join(others)} {verb} more conservative")


def _capabilities(count: int) -> str:
    return f"{count} capability" if count == 1 else f"{count} capabilities"


def _verdict_sentence(name: str, algorithm: str, rows: pd.DataFrame, point: pd.Series | None, margin: float,
                      units: Mapping[tuple[str, str], str]) -> str:
    """One variant's capabilities by verdict, each regressed, improved or changed one with its Δ and 95% CI."""
    judged = [r for r in rows.reindex(columns=["key", "verdict", "oriented_change", "change_ci_low", "change_ci_high"]).to_dict("records")
              if isinstance(r["verdict"], str) and r["verdict"] != ""]
    text = f"{name} ({algorithm or 'no algorithm'}), {_capabilities(len(rows))} at margin ±{margin:g}: "
    found = {verdict: [r for r in judged if r["verdict"] == verdict] for verdict in dict.fromkeys(r["verdict"] for r in judged)}

    def shown(verdict: str) -> str:
        return ", ".join(f"{r['key']} {change_text(r['oriented_change'], r['change_ci_low'], r['change_ci_high'], units.get((name, str(r['key'])), 'points'))}"
                         for r in found[verdict])

    def keys(verdict: str) -> str:
        return ", ".join(str(r["key"]) for r in found[verdict])

    parts = [f"regressed {shown('regressed')}" if "regressed" in found else "none regressed"]
    if "improved" in found:
        parts.append(f"improved {shown('improved')}")
    if "changed" in found:
        parts.append(f"changed (no better side) {shown('changed')}")
    if "equivalent" in found:
        parts.append(f"equivalent {keys('equivalent')}")
    if "inconclusive" in found:
        parts.append(f"inconclusive (too few items to tell) {keys('inconclusive')}")
    if len(judged) < len(rows):
        parts.append(f"{len(rows) - len(judged)} without a verdict")
    text += "; ".join(parts)
    if point is not None and not missing(point["forgetting_adj"]):
        text += (f"; F_adj {100 * float(point['forgetting_adj']):.1f}% of items forgotten vs "
                 f"BT_adj {100 * float(point['backward_transfer_adj']):.1f}% gained")
    return text + "."


def _relative_sentence(name: str, algorithm: str, rows: pd.DataFrame, aggregate_only: bool) -> str:
    """A variant without verdicts: its mean |relative drift| (rises and falls alike), and that nothing is claimed."""
    scored = rows.dropna(subset=["mean_rel_drift_pct"])
    reason = "aggregate scores only" if aggregate_only else "no paired items"
    return (f"{name} ({algorithm or 'no algorithm'}): mean |relative drift| {scored['mean_rel_drift_pct'].abs().mean():.1f}% "
            f"over {_capabilities(len(scored))}, rises and falls alike; no confidence intervals ({reason}), so no change "
            "can be told apart from noise.")


def ranking_sentence(a: str, b: str, difference: float, low: float, high: float) -> str:
    """Whether the data rank algorithm `a` against `b` by mean |relative drift| (only a CI that excludes 0 ranks them).

    Mean |relative drift| counts rises and falls alike, so the sentence says "moved", never "drifted" or "forgot"."""
    if any(math.isnan(float(x)) for x in (difference, low, high)):
        return f"The data cannot rank {a} and {b}: there is no confidence interval for their difference."
    if low > 0 or high < 0:
        more, less = (a, b) if difference > 0 else (b, a)
        return (f"{more} moved its capabilities more than {less} (mean |relative drift|, rises and falls alike): "
                f"higher by {signed_change(abs(difference), True).lstrip('+')} {RELATIVE} (95% CI of {a} − {b} "
                f"{ci_text(low, high)} excludes 0).")
    return (f"The data cannot rank {a} and {b} by mean |relative drift|: {a} − {b} = {signed(difference)} {RELATIVE}, "
            f"95% CI {ci_text(low, high)} includes 0.")


def measure_sentence(a: str, b: str, measure: str, difference: float, low: float, high: float) -> str | None:
    """An ordering of `a` and `b` by an item-level measure (F_adj, 1 − BC) only where its CI excludes 0; None without a value."""
    label, scale, unit = MEASURES[measure]
    if any(math.isnan(float(x)) for x in (difference, low, high)):
        return None
    d, lo, hi = scale * difference, scale * low, scale * high
    if lo > 0 or hi < 0:
        more, less = (a, b) if d > 0 else (b, a)
        return (f"{more} has more {label} than {less}: {signed_change(abs(d), True).lstrip('+')} {unit} (95% CI of {a} − {b} "
                f"{ci_text(lo, hi)} excludes 0).")
    return (f"The data cannot order {a} and {b} by {label}: {a} − {b} = {signed(d)} {unit}, 95% CI {ci_text(lo, hi)} "
            "includes 0.")


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


def _sft_verdicts(caps: pd.DataFrame) -> str:
    """What SFT's variants' verdicts say, for the expectation sentence ("" where they have none)."""
    if "verdict" not in caps:
        return ""
    verdicts = caps.loc[caps["algorithm"] == "SFT", "verdict"]
    verdicts = verdicts[verdicts.map(lambda v: isinstance(v, str) and v != "")]
    if verdicts.empty:
        return ""
    return (f" Mean |relative drift| counts rises and falls alike: of SFT's {len(verdicts)} capability verdicts, "
            f"{int((verdicts == 'regressed').sum())} regressed and {int((verdicts == 'improved').sum())} improved.")


def _expectation_sentence(contrasts: pd.DataFrame, caps: pd.DataFrame) -> str | None:
    """Whether SFT's contrasts with the algorithms the expectation names test it: a CI that excludes 0 against each."""
    present = {str(a) for a in caps["algorithm"] if a}
    said = expectation(present)
    if said is None:
        return None
    named = contrasts["algorithm_a"].isin(_PUBLISHED) | contrasts["algorithm_b"].isin(_PUBLISHED)
    rows = contrasts[((contrasts["algorithm_a"] == "SFT") | (contrasts["algorithm_b"] == "SFT")) & named]
    if rows.empty:
        return None
    verdicts = []
    for r in rows.itertuples():
        sign = 1.0 if r.algorithm_a == "SFT" else -1.0
        low, high = sorted((sign * float(r.ci_low), sign * float(r.ci_high)))
        verdicts.append("more" if low > 0 else "less" if high < 0 else "unknown")
    others = " and ".join(str(r.algorithm_b if r.algorithm_a == "SFT" else r.algorithm_a) for r in rows.itertuples())
    if all(v == "more" for v in verdicts):
        return (f"SFT moved its capabilities more than {others} here, with CIs that exclude 0: this agrees with the "
                f"{said}.{_sft_verdicts(caps)}")
    if "less" in verdicts:
        return f"SFT moved its capabilities less than {others} with a CI that excludes 0: this contradicts the {said}."
    return (f"The data cannot test the {said}, because not every difference between SFT and {others} has a CI that "
            "excludes 0.")


def findings(caps: pd.DataFrame, checkpoints: pd.DataFrame, contrasts: pd.DataFrame | None = None,
             aggregate_only: bool = False, margin: float = 5.0,
             units: Mapping[tuple[str, str], str] | None = None, smoke: bool = False) -> list[str]:
    """Sentences saying what changed: one per variant, then what the data say about ranking algorithms.

    Args:
        caps: the leaderboard's capability table (level, key, variant, algorithm, mean_rel_drift_pct and the
            verdict columns oriented_change, change_ci_low, change_ci_high, verdict).
        checkpoints: the leaderboard's checkpoint table (variant, forgetting_adj, backward_transfer_adj).
        contrasts: algorithm contrasts (captrack.analysis.ranking.CONTRAST_COLUMNS); None or empty: no CI
            on any difference, so algorithms are not ranked.
        aggregate_only: the numbers are aggregate scores (no items): no CI, so no claim beyond the point values.
        margin: the verdicts' equivalence margin.
        units: (variant, capability) -> the unit of its Δ (captrack.report.verdict_cells.capability_units;
            default points).
        smoke: a smoke test (`captrack run --quick`): the per-variant verdict sentences, then SMOKE_SENTENCE in
            place of any ordering of algorithms, measure contrast or published expectation.
    """
    capability_rows = caps[caps["level"] == "capability"]
    points = checkpoints.set_index("variant") if not checkpoints.empty else pd.DataFrame()
    sentences = []
    for name, rows in capability_rows.groupby("variant", sort=False):
        algorithm = str(rows["algorithm"].iloc[0] or "")
        point = points.loc[name] if name in points.index else None
        scored = rows.dropna(subset=["mean_rel_drift_pct"])
        if scored.empty:
            sentences.append(f"{name} ({algorithm or 'no algorithm'}): no capability could be scored.")
        elif not aggregate_only and "verdict" in scored and scored["verdict"].map(lambda v: isinstance(v, str) and v != "").any():
            sentences.append(_verdict_sentence(str(name), algorithm, scored, point, margin, units or {}))
        else:
            sentences.append(_relative_sentence(str(name), algorithm, scored, aggregate_only))
    algorithms = {str(a) for a in capability_rows["algorithm"] if a}
    if smoke:
        return [*sentences, SMOKE_SENTENCE]
    if len(algorithms) < 2:
        return sentences
    caveat = one_checkpoint_sentence(single_checkpoint_algorithms(capability_rows))
    sentences += [caveat] if caveat else []
    if aggregate_only or contrasts is None or contrasts.empty:
        sentences.append(f"The data cannot rank the algorithms ({', '.join(sorted(algorithms))}): "
                         "there is no confidence interval on any difference between them"
                         + (" (aggregate scores only)." if aggregate_only else "."))
        return sentences
    sentences += [ranking_sentence(r.algorithm_a, r.algorithm_b, r.difference, r.ci_low, r.ci_high)
                  for r in contrasts.itertuples()]
    sentences += _measure_sentences(contrasts)
    said = _expectation_sentence(contrasts, capability_rows)
    if said:
        sentences.append(said)
    return sentences


def target_sentences(drift: pd.DataFrame, target: str, margin: float = 5.0) -> list[str]:
    """Per variant, the change of the post-training's target task (each metric): base → variant, then the observed
    change Δ with its 95% CI and verdict, and what that verdict says; a variant without the target says so."""
    rows = drift[drift["task"] == target]
    out = []
    for variant in dict.fromkeys(str(v) for v in drift["variant"]):
        mine = rows[rows["variant"] == variant]
        if mine.empty:
            out.append(f"Target {target} was not evaluated for {variant}: its post-training cannot be checked.")
            continue
        for r in mine.to_dict("records"):
            head = (f"Target {target}/{r['metric']} for {variant}: {float(r['base_value']):.3f} → "
                    f"{float(r['variant_value']):.3f} (relative drift {signed(r['rel_drift_pct'], suffix='%')})")
            found = r.get("verdict")
            if not isinstance(found, str) or not found:
                out.append(f"{head}, no verdict: the data cannot say whether the post-training moved its target.")
                continue
            said = verdict_text(r["oriented_change"], r["change_ci_low"], r["change_ci_high"], str(r.get("change_unit") or "points"),
                                found, margin)
            meaning = {"improved": "the post-training moved its target, for the better",
                       "regressed": "the post-training moved its target, for the worse",
                       "changed": "the post-training moved its target",
                       "equivalent": f"the post-training did not move its target by ±{margin:g} or more",
                       "inconclusive": "the data cannot say whether the post-training moved its target"}.get(found, "")
            out.append(f"{head}; Δ {said}: {meaning}.")
    return out
