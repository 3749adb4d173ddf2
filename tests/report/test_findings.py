"""The leaderboard's plain-text findings: claims only where a verdict (or a CI on a difference) supports them,
an improvement never counted as drift, and no algorithm named that the board does not have."""

from __future__ import annotations

import math
import re

import pandas as pd

from captrack.report.findings import expectation, findings, target_sentences

NAN = math.nan


def _caps(rows: list[tuple[str, str, str, float, float, float, float, str]]) -> pd.DataFrame:
    """(variant, algorithm, key, relative drift %, Δ points, CI low, CI high, verdict) per capability."""
    return pd.DataFrame([{"level": "capability", "variant": v, "algorithm": a, "key": k, "mean_rel_drift_pct": d,
                          "oriented_change": c, "change_ci_low": lo, "change_ci_high": hi, "verdict": verdict}
                         for v, a, k, d, c, lo, hi, verdict in rows])


def _contrast(a: str, b: str, difference: float, low: float, high: float) -> dict[str, object]:
    return {"base": "base", "algorithm_a": a, "algorithm_b": b, "mean_abs_drift_a": NAN, "mean_abs_drift_b": NAN,
            "difference": difference, "ci_low": low, "ci_high": high, "n_capabilities": 2}


SFT_DPO = _caps([("sft", "SFT", "C1", 25.0, 15.0, 10.7, 20.7, "improved"),
                 ("sft", "SFT", "W2", 100.0, -20.0, -26.2, -15.0, "regressed"),
                 ("sft", "SFT", "C2", 1.0, 0.4, -2.0, 2.9, "equivalent"),
                 ("sft", "SFT", "H1", -9.0, -3.0, -9.5, 3.1, "inconclusive"),
                 ("dpo", "DPO", "C1", 12.0, 4.0, 0.9, 7.1, "improved"),
                 ("dpo", "DPO", "W2", 0.0, 0.0, -2.0, 2.0, "equivalent")])


def test_each_variant_is_told_by_its_verdicts_with_the_change_and_ci_behind_each_claim() -> None:
    points = pd.DataFrame([{"variant": "sft", "forgetting_adj": 0.0, "backward_transfer_adj": 0.058}])
    sft, dpo, *_ = findings(SFT_DPO, points, margin=5.0)
    assert sft == ("sft (SFT), 4 capabilities at margin ±5: regressed W2 -20.0 points [-26.2, -15.0]; improved C1 "
                   "+15.0 points [+10.7, +20.7]; equivalent C2; inconclusive (too few items to tell) H1; F_adj 0.0% of "
                   "items forgotten vs BT_adj 5.8% gained.")
    assert dpo.startswith("dpo (DPO), 2 capabilities at margin ±5: none regressed; improved C1 +4.0 points [+0.9, +7.1]")


def test_an_improvement_is_never_counted_as_drift_or_forgetting() -> None:
    only_gains = _caps([("dpo", "DPO", "C1", 12.0, 4.0, 0.9, 7.1, "improved"),
                        ("dpo", "DPO", "C2", 30.0, 6.0, 2.0, 10.0, "improved")])
    said = findings(only_gains, pd.DataFrame())[0]
    assert "none regressed" in said and "improved C1" in said
    assert not re.search(r"drift|fell|forg|worse", said), said
    # mean |relative drift| counts rises and falls alike: the ranking says "moved", never "drifts more" or "forgets"
    ranked = findings(SFT_DPO, pd.DataFrame(), pd.DataFrame([_contrast("DPO", "SFT", -20.0, -30.0, -10.0)]))
    assert ranked[3] == ("SFT moved its capabilities more than DPO (mean |relative drift|, rises and falls alike): higher "
                         "by 20.0 (difference of two relative drifts, each in % of base: CapTrack-compatible) (95% CI of "
                         "DPO − SFT [-30.0, -10.0] excludes 0).")
    assert ranked[-1].startswith("SFT moved its capabilities more than DPO here, with CIs that exclude 0: this agrees")
    assert ranked[-1].endswith("of SFT's 4 capability verdicts, 1 regressed and 1 improved.")
    assert not any("drifts more" in s for s in ranked)


def test_the_published_expectation_names_only_the_algorithms_the_board_has() -> None:
    assert expectation({"SFT", "DPO"}) == ("published expectation (CapTrack; Balasubramanian & Kasiviswanathan 2026): "
                                           "SFT drifts most, preference optimisation (DPO) is more conservative")
    assert "RL are more conservative" in str(expectation({"SFT", "DPO", "RL"}))
    assert expectation({"SFT", "IFT"}) is None and expectation({"DPO", "RL"}) is None
    said = findings(SFT_DPO, pd.DataFrame(), pd.DataFrame([_contrast("DPO", "SFT", -20.0, -30.0, -10.0)]))
    assert not any(re.search(r"\bRL\b", s) for s in said), said
    # an algorithm the expectation does not name (IFT) is not tested against it
    ift = SFT_DPO.assign(algorithm=SFT_DPO["algorithm"].replace("DPO", "IFT"))
    said = findings(ift, pd.DataFrame(), pd.DataFrame([_contrast("IFT", "SFT", -20.0, -30.0, -10.0)]))
    assert not any("expectation" in s for s in said), said


def test_algorithms_are_ranked_only_with_a_ci_on_their_difference() -> None:
    caps = _caps([("sft", "SFT", "C1", -30.0, -18.0, -25.0, -11.0, "regressed"),
                  ("rl", "RL", "C1", -5.0, -3.0, -7.0, 1.0, "inconclusive")])
    unranked = findings(caps, pd.DataFrame())[-1]
    assert unranked.startswith("The data cannot rank the algorithms (RL, SFT)") and "agrees" not in unranked
    wide = pd.DataFrame([_contrast("RL", "SFT", -25.0, -40.0, 3.0)])
    said = findings(caps, pd.DataFrame(), wide)
    assert said[-2] == ("The data cannot rank RL and SFT by mean |relative drift|: RL − SFT = -25.0 (difference of two "
                        "relative drifts, each in % of base: CapTrack-compatible), 95% CI [-40.0, +3.0] includes 0.")
    assert said[-1].startswith("The data cannot test the published expectation")
    reverse = pd.DataFrame([_contrast("RL", "SFT", 25.0, 10.0, 40.0)])
    assert "contradicts the published expectation" in findings(caps, pd.DataFrame(), reverse)[-1]


def test_no_minus_zero_and_no_ci_of_no_width_in_a_sentence() -> None:
    from captrack.report.findings import measure_sentence

    near = measure_sentence("RL", "SFT", "f_adj", -0.006, -0.009, -0.0004)  # −0.6 points, CI [−0.9, −0.04]
    assert near == ("SFT has more chance-adjusted forgetting F_adj than RL: 0.6 points (95% CI of RL − SFT "
                    "[-0.90, -0.04] excludes 0).")
    flat = measure_sentence("DPO", "RL", "one_minus_bc", -0.0001, -0.0002, 0.0002)
    assert flat == ("The data cannot order DPO and RL by option-distribution movement 1 − BC: DPO − RL = 0.0 points, "
                    "95% CI [-0.02, +0.02] includes 0.")


def test_aggregate_scores_never_claim_a_change() -> None:
    caps = _caps([("ift", "IFT", "C1", -30.0, NAN, NAN, NAN, ""), ("dpo", "DPO", "C1", -5.0, NAN, NAN, NAN, "")])
    said = findings(caps, pd.DataFrame(), None, aggregate_only=True)
    assert said[0] == ("ift (IFT): mean |relative drift| 30.0% over 1 capability, rises and falls alike; no confidence "
                       "intervals (aggregate scores only), so no change can be told apart from noise.")
    assert said[-1] == ("The data cannot rank the algorithms (DPO, IFT): there is no confidence interval on any "
                        "difference between them (aggregate scores only).")
    assert not any("improved" in s or "regressed" in s or "agrees" in s for s in said)


def test_single_algorithm_and_unscored() -> None:
    only_dpo = _caps([("dpo", "DPO", "C1", -5.0, -3.0, -6.0, -1.0, "regressed")])
    assert len(findings(only_dpo, pd.DataFrame())) == 1
    unscored = _caps([("sft", "SFT", "C1", NAN, NAN, NAN, NAN, "")])
    assert findings(unscored, pd.DataFrame()) == ["sft (SFT): no capability could be scored."]


def test_the_target_line_says_what_its_verdict_supports() -> None:
    drift = pd.DataFrame({"variant": ["sft", "dpo", "rl", "sft"], "task": ["tgt", "tgt", "tgt", "other"], "metric": "acc",
                          "base_value": [0.5, 0.5, 0.5, 0.7], "variant_value": [0.6, 0.52, 0.5, 0.7],
                          "rel_drift_pct": [20.0, 4.0, 0.0, 0.0], "change_unit": "points",
                          "oriented_change": [10.0, 2.0, 0.0, 0.0], "change_ci_low": [4.0, -6.1, -2.5, -1.0],
                          "change_ci_high": [16.0, 9.8, 2.5, 1.0],
                          "verdict": ["improved", "inconclusive", "equivalent", "equivalent"]})
    sft, dpo, rl = target_sentences(drift, "tgt", 5.0)
    assert sft == ("Target tgt/acc for sft: 0.500 → 0.600 (relative drift +20.0%); Δ +10.0 points [+4.0, +16.0] → improved "
                   "at ±5: the post-training moved its target, for the better.")
    assert dpo.endswith("Δ +2.0 points [-6.1, +9.8] → inconclusive at ±5: the data cannot say whether the post-training "
                        "moved its target.")  # not "did NOT move": too few items to tell
    assert rl.endswith("0.0 points [-2.5, +2.5] → equivalent at ±5: the post-training did not move its target by ±5 or more.")
    assert target_sentences(drift, "missing")[0].startswith("Target missing was not evaluated for sft")


def test_a_smoke_test_ranks_no_algorithms_and_tests_no_published_expectation() -> None:
    """`captrack run --quick` (3 items a task): verdict sentences per variant, then one line saying it is a smoke test."""
    contrasts = pd.DataFrame([_contrast("DPO", "SFT", -20.0, -30.0, -10.0)])
    full = findings(SFT_DPO, pd.DataFrame(), contrasts)
    said = findings(SFT_DPO, pd.DataFrame(), contrasts, smoke=True)
    assert said[:2] == full[:2] and len(said) == 3 and "smoke test" in said[-1]
    assert not any("expectation (CapTrack" in s or "moved its capabilities more" in s for s in said), said
    assert not any(re.search(r"\bRL\b", s) for s in said)
