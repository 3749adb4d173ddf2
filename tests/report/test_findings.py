"""The leaderboard's plain-text findings: what counts as clear drift, and the algorithm comparison."""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.findings import findings


def _caps(rows: list[tuple[str, str, str, float, float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"level": "capability", "variant": v, "algorithm": a, "key": k, "mean_rel_drift_pct": d,
                          "ci_low": lo, "ci_high": hi} for v, a, k, d, lo, hi in rows])


def test_clear_drift_needs_a_ci_that_excludes_zero() -> None:
    caps = _caps([("sft", "SFT", "C1", -30.0, -50.0, -10.0), ("sft", "SFT", "H1", 20.0, -5.0, 40.0),
                  ("sft", "SFT", "W1", math.nan, math.nan, math.nan),
                  ("rl", "RL", "C1", -5.0, -12.0, 2.0), ("rl", "RL", "H1", 10.0, 1.0, 19.0)])
    points = pd.DataFrame([{"variant": "sft", "forgetting_adj": 0.25, "backward_transfer_adj": 0.05},
                           {"variant": "rl", "forgetting_adj": math.nan, "backward_transfer_adj": math.nan}])
    sft, rl, comparison = findings(caps, points)
    assert sft == ("sft (SFT): mean |drift| 25.0% over 2 capabilities; 1 fell and 0 rose beyond noise; "
                   "largest drop C1 -30.0%; F_adj 25.0% of items forgotten vs BT_adj 5.0% gained.")
    assert rl == "rl (RL): mean |drift| 7.5% over 2 capabilities; 0 fell and 1 rose beyond noise; largest gain H1 +10.0%."
    assert comparison.startswith("Mean |drift| by algorithm: SFT 25.0%, RL 7.5%. This agrees with")


def test_no_comparison_without_sft_and_a_disagreement_is_said() -> None:
    only_dpo = _caps([("dpo", "DPO", "C1", -5.0, -9.0, -1.0)])
    assert len(findings(only_dpo, pd.DataFrame())) == 1
    calm_sft = _caps([("sft", "SFT", "C1", -1.0, -3.0, 1.0), ("dpo", "DPO", "C1", -9.0, -12.0, -6.0)])
    assert "does not agree with" in findings(calm_sft, pd.DataFrame())[-1]
    unscored = _caps([("sft", "SFT", "C1", math.nan, math.nan, math.nan)])
    assert findings(unscored, pd.DataFrame()) == ["sft (SFT): no capability could be scored."]
