"""The leaderboard's plain-text findings: what counts as clear drift, and the algorithm comparison."""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.findings import findings


def _caps(rows: list[tuple[str, str, str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"level": "capability", "variant": v, "algorithm": a, "key": k, "mean_rel_drift_pct": d,
                          "ci_low": lo, "ci_high": hi} for v, a, k, d, lo, hi in rows])


def _contrast(a: str, b: str, difference: float, low: float, high: float) -> dict[str, object]:
    return {"base": "base", "algorithm_a": a, "algorithm_b": b, "mean_abs_drift_a": math.nan, "mean_abs_drift_b": math.nan,
            "difference": difference, "ci_low": low, "ci_high": high, "n_capabilities": 2}


def test_clear_drift_needs_a_ci_that_excludes_zero() -> None:
    caps = _caps([("sft", "SFT", "C1", -30.0, -50.0, -10.0), ("sft", "SFT", "H1", 20.0, -5.0, 40.0),
                  ("sft", "SFT", "W1", math.nan, math.nan, math.nan),
                  ("rl", "RL", "C1", -5.0, -12.0, 2.0), ("rl", "RL", "H1", 10.0, 1.0, 19.0)])
    points = pd.DataFrame([{"variant": "sft", "forgetting_adj": 0.25, "backward_transfer_adj": 0.05},
                           {"variant": "rl", "forgetting_adj": math.nan, "backward_transfer_adj": math.nan}])
    sft, rl, *_ = findings(caps, points)
    assert sft == ("sft (SFT): mean |drift| 25.0% over 2 capabilities; 1 fell and 0 rose beyond noise (a 95% CI that excludes 0); "
                   "largest fall C1 -30.0%; F_adj 25.0% of items forgotten vs BT_adj 5.0% gained.")
    assert rl == ("rl (RL): mean |drift| 7.5% over 2 capabilities; 0 fell and 1 rose beyond noise (a 95% CI that excludes 0); "
                  "largest rise H1 +10.0%.")


def test_algorithms_are_ranked_only_with_a_ci_on_their_difference() -> None:
    caps = _caps([("sft", "SFT", "C1", -30.0, -50.0, -10.0), ("rl", "RL", "C1", -5.0, -12.0, 2.0)])
    # No contrasts (no CI on the difference): the data cannot rank them, whatever the point values say.
    unranked = findings(caps, pd.DataFrame())[-1]
    assert unranked.startswith("The data cannot rank the algorithms (RL, SFT)") and "agrees" not in unranked
    # A CI that includes 0: still no ranking and no verdict on the published expectation.
    wide = pd.DataFrame([_contrast("RL", "SFT", -25.0, -40.0, 3.0)])
    said = findings(caps, pd.DataFrame(), wide)
    assert said[-2] == "The data cannot rank RL and SFT: mean |drift| RL − SFT = -25.0 points, 95% CI [-40.0, +3.0] includes 0."
    assert said[-1].startswith("The data cannot test the published expectation")
    # A CI that excludes 0: ranked, and only then compared with the published expectation.
    narrow = pd.DataFrame([_contrast("RL", "SFT", -25.0, -40.0, -10.0)])
    said = findings(caps, pd.DataFrame(), narrow)
    assert said[-2] == "SFT drifts more than RL: mean |drift| 25.0 points higher (95% CI of RL − SFT [-40.0, -10.0] excludes 0)."
    assert said[-1].startswith("SFT drifts more than every other algorithm") and "agrees with the published" in said[-1]
    reverse = pd.DataFrame([_contrast("RL", "SFT", 25.0, 10.0, 40.0)])
    assert "contradicts the published expectation" in findings(caps, pd.DataFrame(), reverse)[-1]


def test_aggregate_scores_never_claim_beyond_noise() -> None:
    caps = _caps([("ift", "IFT", "C1", -30.0, math.nan, math.nan), ("dpo", "DPO", "C1", -5.0, math.nan, math.nan)])
    said = findings(caps, pd.DataFrame(), None, aggregate_only=True)
    assert said[0] == ("ift (IFT): mean |drift| 30.0% over 1 capabilities; no confidence intervals (aggregate scores only), "
                       "so no drift can be told apart from noise.")
    assert said[-1] == "The data cannot rank the algorithms (DPO, IFT): there is no confidence interval on any difference between them (aggregate scores only)."
    assert not any("rose beyond noise" in s or "agrees" in s for s in said)


def test_single_algorithm_and_unscored() -> None:
    only_dpo = _caps([("dpo", "DPO", "C1", -5.0, -9.0, -1.0)])
    assert len(findings(only_dpo, pd.DataFrame())) == 1
    unscored = _caps([("sft", "SFT", "C1", math.nan, math.nan, math.nan)])
    assert findings(unscored, pd.DataFrame()) == ["sft (SFT): no capability could be scored."]
