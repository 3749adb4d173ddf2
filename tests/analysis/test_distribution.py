"""Distribution-level diagnostics: hand-computed items, summaries, calibration, and the identity case."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from captrack.analysis.distribution import (
    CALIBRATION_COLUMNS,
    ITEM_COLUMNS,
    SUMMARY_COLUMNS,
    Thresholds,
    aggregate_by_algorithm,
    calibration,
    choice_probs,
    diagnose,
    item_diagnostics,
)
from captrack.errors import InputError
from captrack.results.option_loglikelihoods import loglikelihoods_from_resps


def ll(*probs: float) -> list[float]:
    """Loglikelihoods whose softmax is `probs` (which sum to 1)."""
    return [math.log(p) for p in probs]


def frame(rows: list[tuple[str, str, str, int, list[float], list[float]]]) -> pd.DataFrame:
    """An input frame from (variant, algorithm, task, gold, base_ll, variant_ll) tuples."""
    return pd.DataFrame([{"variant": v, "algorithm": a, "task": t, "doc_hash": f"d{i}", "gold": g,
                          "base_ll": b, "variant_ll": w} for i, (v, a, t, g, b, w) in enumerate(rows)])


# --- choice probabilities -------------------------------------------------------------------------


def test_choice_probs_is_a_softmax() -> None:
    np.testing.assert_allclose(choice_probs([0.0, 0.0]), [0.5, 0.5])
    np.testing.assert_allclose(choice_probs([math.log(1), math.log(3)]), [0.25, 0.75])
    np.testing.assert_allclose(choice_probs([-1000.0, -1001.0]), choice_probs([0.0, -1.0]))
    np.testing.assert_allclose(choice_probs([-2.0, -math.inf]), [1.0, 0.0])


@pytest.mark.parametrize("bad", [[], [math.nan, 0.0], [math.inf, 0.0], [-math.inf, -math.inf]])
def test_choice_probs_rejects_unusable_loglikelihoods(bad: list[float]) -> None:
    with pytest.raises(ValueError):
        choice_probs(bad)


def test_loglikelihoods_are_read_from_lm_eval_filtered_resps() -> None:
    assert loglikelihoods_from_resps([["-3.2", "False"], ["-0.5", "True"]]) == [-3.2, -0.5]
    with pytest.raises(ValueError, match=r"filtered_resps\[1\]"):
        loglikelihoods_from_resps([["-3.2", "False"], ["oops", "True"]])


# --- single items -------------------------------------------------------------------------------


def test_collapse_when_the_variant_leaves_almost_no_mass_on_the_base_answer() -> None:
    d = item_diagnostics(ll(0.7, 0.1, 0.1, 0.1), ll(0.05, 0.8, 0.1, 0.05), gold=0)
    assert d["transition"] == "10" and d["forgetting_kind"] == "collapse"
    assert d["collapse"] and not d["drift"] and not d["shift"] and not d["eroding"]
    assert d["mass_retained"] == pytest.approx(0.05)
    bc = math.sqrt(0.7 * 0.05) + math.sqrt(0.1 * 0.8) + math.sqrt(0.1 * 0.1) + math.sqrt(0.1 * 0.05)
    assert d["bhattacharyya"] == pytest.approx(bc)  # 0.6406
    assert d["gold_prob_base"] == pytest.approx(0.7) and d["gold_prob_variant"] == pytest.approx(0.05)
    assert d["gold_prob_change"] == pytest.approx(-0.65)
    assert d["flip_margin_nats"] == pytest.approx(math.log(0.8 / 0.05))
    assert (d["base_answer"], d["variant_answer"], d["n_choices"]) == (0, 1, 4)
    np.testing.assert_allclose(d["variant_probs"], [0.05, 0.8, 0.1, 0.05])


def test_drift_when_a_near_tie_flips() -> None:
    d = item_diagnostics(ll(0.6, 0.3, 0.05, 0.05), ll(0.4, 0.45, 0.1, 0.05), gold=0)
    assert d["forgetting_kind"] == "drift" and d["drift"] and not d["collapse"]
    assert d["mass_retained"] == pytest.approx(0.4)
    assert d["flip_margin_nats"] == pytest.approx(math.log(0.45 / 0.4))  # 0.118 ≤ 0.5


def test_shift_when_mass_is_kept_but_clearly_overtaken() -> None:
    d = item_diagnostics(ll(0.6, 0.3, 0.05, 0.05), ll(0.2, 0.7, 0.05, 0.05), gold=0)
    assert d["forgetting_kind"] == "shift"  # 0.2 ≥ 0.4/4, margin log 3.5 = 1.25 > 0.5
    tight = Thresholds(tie_nats=1.3)
    assert item_diagnostics(ll(0.6, 0.3, 0.05, 0.05), ll(0.2, 0.7, 0.05, 0.05), 0, tight)["forgetting_kind"] == "drift"


def test_collapse_threshold_is_relative_to_chance() -> None:
    # 0.15 on the base answer: below 0.4/2 = 0.2 with two options, above 0.4/4 = 0.1 with four.
    assert item_diagnostics(ll(0.9, 0.1), ll(0.15, 0.85), gold=0)["forgetting_kind"] == "collapse"
    assert item_diagnostics(ll(0.9, 0.05, 0.03, 0.02), ll(0.15, 0.8, 0.03, 0.02), gold=0)["forgetting_kind"] == "shift"


def test_eroding_items_lose_gold_mass_without_flipping() -> None:
    still_right = item_diagnostics(ll(0.9, 0.05, 0.03, 0.02), ll(0.6, 0.3, 0.05, 0.05), gold=0)
    assert still_right["transition"] == "11" and still_right["eroding"]
    still_wrong = item_diagnostics(ll(0.1, 0.5, 0.4), ll(0.1, 0.8, 0.1), gold=2)
    assert still_wrong["transition"] == "00" and still_wrong["eroding"]  # 0.4 → 0.1
    small = item_diagnostics(ll(0.9, 0.05, 0.03, 0.02), ll(0.75, 0.15, 0.05, 0.05), gold=0)
    assert not small["eroding"]  # fell by 0.15 ≤ 0.2
    flipped = item_diagnostics(ll(0.7, 0.1, 0.1, 0.1), ll(0.05, 0.8, 0.1, 0.05), gold=0)
    assert not flipped["eroding"]


def test_gained_items_are_not_forgetting() -> None:
    d = item_diagnostics(ll(0.05, 0.8, 0.1, 0.05), ll(0.7, 0.1, 0.1, 0.1), gold=0)
    assert d["transition"] == "01" and d["forgetting_kind"] == "" and not d["collapse"]


def test_identical_distributions_show_nothing() -> None:
    base = [-0.3, -2.0, -2.5, -4.0]
    d = item_diagnostics(base, list(base), gold=1)
    assert d["bhattacharyya"] == pytest.approx(1.0, abs=1e-12)
    assert d["mass_retained"] == pytest.approx(d["base_probs"][0])
    assert d["gold_prob_change"] == 0.0 and d["flip_margin_nats"] == 0.0
    assert not (d["collapse"] or d["drift"] or d["shift"] or d["eroding"])


def test_item_errors_name_the_problem() -> None:
    with pytest.raises(ValueError, match="options"):
        item_diagnostics([0.0, -1.0], [0.0, -1.0, -2.0], gold=0)
    with pytest.raises(ValueError, match="gold index"):
        item_diagnostics([0.0, -1.0], [0.0, -1.0], gold=2)
    with pytest.raises(ValueError, match="collapse_ratio"):
        Thresholds(collapse_ratio=0.0)


# --- tables -------------------------------------------------------------------------------------


ROWS = [
    ("sft-1", "SFT", "mmlu", 0, ll(0.7, 0.1, 0.1, 0.1), ll(0.05, 0.8, 0.1, 0.05)),     # collapse
    ("sft-1", "SFT", "mmlu", 0, ll(0.6, 0.3, 0.05, 0.05), ll(0.4, 0.45, 0.1, 0.05)),  # drift
    ("sft-1", "SFT", "mmlu", 0, ll(0.9, 0.05, 0.03, 0.02), ll(0.6, 0.3, 0.05, 0.05)),  # eroding (11)
    ("sft-1", "SFT", "mmlu", 0, ll(0.05, 0.8, 0.1, 0.05), ll(0.7, 0.1, 0.1, 0.1)),    # gained
    ("sft-1", "SFT", "arc", 0, ll(0.9, 0.1), ll(0.15, 0.85)),                          # collapse (k = 2)
    ("sft-1", "SFT", "arc", 1, ll(0.5, 0.3, 0.2), ll(0.5, 0.3, 0.2)),                  # unchanged (00)
    ("rl-1", "RL", "mmlu", 0, ll(0.6, 0.3, 0.05, 0.05), ll(0.2, 0.7, 0.05, 0.05)),    # shift
    ("rl-1", "RL", "mmlu", 1, ll(0.1, 0.8, 0.05, 0.05), ll(0.1, 0.8, 0.05, 0.05)),    # unchanged (11)
]


def test_diagnose_items_and_summary() -> None:
    items, summary = diagnose(frame(ROWS))
    assert list(items.columns) == ITEM_COLUMNS and list(summary.columns) == SUMMARY_COLUMNS
    assert items.forgetting_kind.tolist() == ["collapse", "drift", "", "", "collapse", "", "shift", ""]
    assert items.eroding.tolist() == [False, False, True, False, False, False, False, False]
    assert items.doc_hash.tolist() == [f"d{i}" for i in range(8)]
    s = summary.set_index(["variant", "task"])
    mmlu = s.loc[("sft-1", "mmlu")]
    assert (mmlu.n, mmlu.k, mmlu.n_forgotten, mmlu.n_gained) == (4, 4, 2, 1)
    assert (mmlu.n_collapse, mmlu.n_drift, mmlu.n_shift, mmlu.n_eroding) == (1, 1, 0, 1)
    assert mmlu.collapse_share == 0.25 and mmlu.collapse_of_forgotten == 0.5
    arc = s.loc[("sft-1", "arc")]
    assert (arc.n, arc.n_collapse, arc.n_forgotten) == (2, 1, 1)
    assert arc.mean_bc == pytest.approx((math.sqrt(0.9 * 0.15) + math.sqrt(0.1 * 0.85) + 1.0) / 2)
    rl = s.loc[("rl-1", "mmlu")]
    assert (rl.n_shift, rl.n_forgotten, rl.drift_share) == (1, 1, 0.0)
    assert rl.mean_mass_retained == pytest.approx((0.2 + 0.8) / 2)


def test_aggregate_by_algorithm_pools_counts_and_weights_means_by_items() -> None:
    _, summary = diagnose(frame(ROWS))
    agg = aggregate_by_algorithm(summary).set_index("algorithm")
    sft = agg.loc["SFT"]
    assert (sft.n_variants, sft.n_tasks, sft.n, sft.n_collapse, sft.n_forgotten) == (1, 2, 6, 2, 3)
    assert sft.collapse_share == pytest.approx(2 / 6) and sft.collapse_of_forgotten == pytest.approx(2 / 3)
    parts = summary[summary.algorithm == "SFT"]
    assert sft.mean_bc == pytest.approx(float((parts.mean_bc * parts.n).sum() / 6))
    assert agg.loc["RL"].n == 2
    by_task = aggregate_by_algorithm(summary, by=("algorithm", "task"))
    assert len(by_task) == 3


def test_identical_base_and_variant_give_no_change_anywhere() -> None:
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(60):
        base = (rng.normal(size=4) * 2).tolist()
        rows.append(("same", "SFT", "t", int(rng.integers(4)), base, list(base)))
    data = frame(rows)
    items, summary = diagnose(data)
    np.testing.assert_allclose(items.bhattacharyya, 1.0, atol=1e-12)
    assert not items[["collapse", "drift", "shift", "eroding"]].to_numpy().any()
    row = summary.iloc[0]
    assert (row.n_forgotten, row.n_gained, row.n_collapse, row.n_drift, row.n_eroding) == (0, 0, 0, 0, 0)
    assert math.isnan(row.collapse_of_forgotten)
    cal = calibration(data, n_resamples=200).iloc[0]
    assert cal.ece_change == 0.0 and cal.brier_change == 0.0
    assert (cal.ece_change_ci_low, cal.ece_change_ci_high) == (0.0, 0.0)
    assert (cal.brier_change_ci_low, cal.brier_change_ci_high) == (0.0, 0.0)


def test_diagnose_rejects_bad_frames_with_the_item_named() -> None:
    with pytest.raises(InputError, match="variant_ll"):
        diagnose(frame(ROWS).drop(columns=["variant_ll"]))
    bad = frame([("v", "SFT", "mmlu", 0, [0.0, -1.0], [0.0, -1.0, -2.0])])
    with pytest.raises(InputError, match="doc_hash 'd0'"):
        diagnose(bad)
    with pytest.raises(InputError, match="gold"):
        diagnose(frame([("v", "SFT", "mmlu", 5, [0.0, -1.0], [0.0, -1.0])]))


def test_empty_frame_gives_empty_tables() -> None:
    items, summary = diagnose(frame([]).reindex(columns=["variant", "algorithm", "task", "doc_hash", "gold",
                                                         "base_ll", "variant_ll"]))
    assert items.empty and summary.empty and list(summary.columns) == SUMMARY_COLUMNS


# --- calibration --------------------------------------------------------------------------------


CAL_ROWS = [
    ("v", "SFT", "t", 0, ll(0.9, 0.1), ll(0.9, 0.1)),
    ("v", "SFT", "t", 1, ll(0.8, 0.2), ll(0.8, 0.2)),
    ("v", "SFT", "t", 0, ll(0.6, 0.4), ll(0.6, 0.4)),
    ("v", "SFT", "t", 0, ll(0.55, 0.45), ll(0.99, 0.01)),
]


def test_ece_and_brier_by_hand() -> None:
    cal = calibration(frame(CAL_ROWS), n_bins=10, n_resamples=0).iloc[0]
    assert list(cal.index) == CALIBRATION_COLUMNS
    # bins (0.8, 0.9], (0.7, 0.8], (0.5, 0.6]: 1/4·|1 − .9| + 1/4·|0 − .8| + 2/4·|1 − .575|
    assert cal.ece_base == pytest.approx(0.4375)
    # variant: 0.99 moves to (0.9, 1.0]: 1/4·.1 + 1/4·.8 + 1/4·.4 + 1/4·.01
    assert cal.ece_variant == pytest.approx(0.3275)
    assert cal.brier_base == pytest.approx((0.02 + 1.28 + 0.32 + 0.405) / 4)
    assert cal.brier_variant == pytest.approx((0.02 + 1.28 + 0.32 + 0.0002) / 4)
    assert cal.ece_change == pytest.approx(0.3275 - 0.4375)
    assert math.isnan(cal.ece_change_ci_low) and math.isnan(cal.brier_change_ci_high)
    two_bins = calibration(frame(CAL_ROWS), n_bins=2, n_resamples=0).iloc[0]
    assert two_bins.ece_base == pytest.approx(abs(0.75 - (0.9 + 0.8 + 0.6 + 0.55) / 4))


def _random_rows(n: int, seed: int, sharpen: float) -> list[tuple[str, str, str, int, list[float], list[float]]]:
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        base = rng.normal(size=4)
        gold = int(rng.choice(4, p=np.exp(base) / np.exp(base).sum()))  # the base is calibrated
        rows.append(("v", "SFT", "t", gold, base.tolist(), (base * sharpen).tolist()))
    return rows


def test_calibration_matches_scikit_learn() -> None:
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss

    rows = _random_rows(400, seed=1, sharpen=3.0)
    data = frame(rows)
    cal = calibration(data, n_bins=10, n_resamples=0).iloc[0]
    for side, column in (("base", "base_ll"), ("variant", "variant_ll")):
        probs = np.array([choice_probs(x) for x in data[column]])
        conf, correct = probs.max(axis=1), (probs.argmax(axis=1) == data.gold).astype(int)
        prob_true, prob_pred = calibration_curve(correct, conf, n_bins=10, strategy="uniform")
        counts = np.bincount(np.searchsorted(np.linspace(0, 1, 11)[1:-1], conf), minlength=10)
        ece = float(np.sum(counts[counts > 0] / len(conf) * np.abs(prob_true - prob_pred)))
        assert cal[f"ece_{side}"] == pytest.approx(ece, rel=1e-9)
        brier = brier_score_loss(data.gold, probs, labels=[0, 1, 2, 3], scale_by_half=False)
        assert cal[f"brier_{side}"] == pytest.approx(brier, rel=1e-9)


def test_overconfident_variant_gets_a_ci_above_zero_reproducibly() -> None:
    data = frame(_random_rows(400, seed=2, sharpen=4.0))
    first = calibration(data, n_resamples=300, seed=7).iloc[0]
    again = calibration(data, n_resamples=300, seed=7).iloc[0]
    assert first.ece_change > 0.1
    assert 0.0 < first.ece_change_ci_low < first.ece_change < first.ece_change_ci_high
    assert first.brier_change_ci_low > 0.0
    assert first.ece_change_ci_low == again.ece_change_ci_low
