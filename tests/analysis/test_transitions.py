"""Transition counts, F/BT and chance adjustment against hand-computed cases."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.stats import bh_qvalues, mcnemar_exact
from captrack.analysis.transitions import Transitions, chance_weight, count_transitions
from captrack.compare.use_case import compare
from captrack.labels import VariantLabels
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store

BASE = [1, 1, 1, 0, 0, 0, 1, 0]
VARIANT = [1, 0, 0, 1, 0, 0, 1, 1]  # n11=2 (items 0, 6), n10=2 (1, 2), n01=2 (3, 7), n00=2 (4, 5)


def test_counts_and_raw_rates() -> None:
    t = count_transitions(np.array(BASE, float), np.array(VARIANT, float), k=4)
    assert (t.n_11, t.n_10, t.n_01, t.n_00, t.n) == (2, 2, 2, 2, 8)
    assert t.forgetting == 0.25 and t.backward_transfer == 0.25
    assert t.acc_pre == 0.5 and t.acc_post == 0.5


@pytest.mark.parametrize(
    ("k", "expected_e", "f_adj", "f_max"),
    [
        # E = (1 - .5)(1 - .5)/(k - 1); F_adj = max(.25 - E, 0); F_max = max((k*.5 - 1)/(k - 1), 0)
        (2, 0.25, 0.0, 0.0),
        (4, 0.25 / 3, 0.25 - 0.25 / 3, 1 / 3),
        (10, 0.25 / 9, 0.25 - 0.25 / 9, 4 / 9),
    ],
)
def test_chance_adjustment_for_k(k: int, expected_e: float, f_adj: float, f_max: float) -> None:
    t = count_transitions(np.array(BASE, float), np.array(VARIANT, float), k=k)
    assert t.expected_by_chance == pytest.approx(expected_e)
    assert t.forgetting_adj == pytest.approx(f_adj)
    assert t.backward_transfer_adj == pytest.approx(f_adj)  # symmetric counts here
    assert t.forgetting_max == pytest.approx(f_max)


def test_accuracy_zero_everywhere_is_all_chance() -> None:
    t = count_transitions(np.zeros(6), np.zeros(6), k=4)
    assert (t.n_00, t.forgetting, t.backward_transfer) == (6, 0.0, 0.0)
    assert t.expected_by_chance == pytest.approx(1 / 3)  # (1-0)(1-0)/3
    assert t.forgetting_adj == 0.0 and t.forgetting_max == 0.0


def test_accuracy_one_everywhere_has_nothing_to_adjust() -> None:
    t = count_transitions(np.ones(5), np.ones(5), k=4)
    assert (t.n_11, t.forgetting, t.expected_by_chance, t.forgetting_adj) == (5, 0.0, 0.0, 0.0)
    assert t.forgetting_max == 1.0


def test_total_forgetting_is_not_discounted() -> None:
    t = count_transitions(np.ones(4), np.zeros(4), k=4)
    assert t.forgetting == 1.0 and t.expected_by_chance == 0.0 and t.forgetting_adj == 1.0


def test_empty_intersection_gives_nan_not_zero() -> None:
    t = count_transitions(np.array([]), np.array([]), k=4)
    assert t.n == 0
    for value in (t.forgetting, t.backward_transfer, t.forgetting_adj, t.acc_pre):
        assert math.isnan(value)


def test_free_form_answers_have_no_chance_term() -> None:
    t = Transitions(n_11=3, n_10=1, n_01=0, n_00=4, k=None)
    assert t.expected_by_chance == 0.0
    assert t.forgetting_adj == t.forgetting == 1 / 8


@pytest.mark.parametrize(
    ("n10", "n01", "p"),
    [(0, 0, 1.0), (2, 2, 1.0), (10, 0, 2 * 0.5**10), (5, 1, 2 * 7 / 64), (1, 5, 2 * 7 / 64)],
)
def test_mcnemar_exact(n10: int, n01: int, p: float) -> None:
    assert mcnemar_exact(n10, n01) == pytest.approx(p)


def test_benjamini_hochberg_by_hand() -> None:
    q = bh_qvalues(np.array([0.01, 0.04, 0.03, 0.2, np.nan]))
    np.testing.assert_allclose(q[:4], [0.04, 0.04 * 4 / 3, 0.04 * 4 / 3, 0.2])
    assert math.isnan(q[4])


# Items with different option counts (README, Definitions): E = mean_i (1 − acc_pre)(1 − acc_post)/(k_i − 1).
# BASE / VARIANT above: acc_pre = acc_post = 1/2, F = BT = 2/8. With k = 2, 2, 4, 4, 4, 4, 10, 10:
# mean_i 1/(k_i − 1) = (1 + 1 + 4·(1/3) + 2·(1/9)) / 8 = (32/9) / 8 = 4/9, so
# E = (1/2)(1/2)·(4/9) = 1/9 and F_adj = BT_adj = 1/4 − 1/9 = 5/36 (the modal k = 4 alone would give 1/6).
MIXED_K = [2, 2, 4, 4, 4, 4, 10, 10]


def test_chance_weight_is_the_mean_of_per_item_inverses() -> None:
    assert chance_weight(np.array(MIXED_K, float)) == pytest.approx(4 / 9)
    assert chance_weight(np.array([4.0] * 5)) == pytest.approx(1 / 3)  # one k: 1/(k − 1)
    assert chance_weight(np.array([4.0, np.nan])) == pytest.approx(1 / 6)  # an item without options adds 0
    assert math.isnan(chance_weight(np.array([])))


def test_chance_adjustment_with_per_item_k_by_hand() -> None:
    t = count_transitions(np.array(BASE, float), np.array(VARIANT, float), k=4)
    mixed = Transitions(t.n_11, t.n_10, t.n_01, t.n_00, k=4, weight=chance_weight(np.array(MIXED_K, float)))
    assert mixed.expected_by_chance == pytest.approx(1 / 9)
    assert mixed.forgetting_adj == pytest.approx(5 / 36) and mixed.backward_transfer_adj == pytest.approx(5 / 36)
    assert t.forgetting_adj == pytest.approx(1 / 6)  # one k = 4 for every item: E = 1/12


def test_generated_answer_letters_are_chance_adjusted_with_each_items_k(tmp_path: Path) -> None:
    # A generation task (answer letter in text) whose docs list 2 to 10 options: k comes from doc["choices"].
    task = "captrack_mmlu_pro_subset"
    docs = {i: {"prompt": f"question {i}", "choices": [f"option {j}" for j in range(k)], "gold": "A"}
            for i, k in enumerate(MIXED_K)}
    for name, values in (("base", BASE), ("v", VARIANT)):
        write_run(tmp_path / name, name, [FakeTask(task, {"acc": values}, output_type="generate_until", docs=docs)])
    with Store() as store:
        for name in ("base", "v"):
            store.ingest(discover_runs(tmp_path / name), VariantLabels(name=name))
        comparison = compare(store, "base", [VariantLabels(name="v")], CompareOptions(bootstrap=0, distribution=False))
    row = comparison.transitions.iloc[0]
    assert (row["n"], row["n_10"], row["n_01"], row["k"]) == (8, 2, 2, 4)  # k reported: the most common
    assert row["forgetting_adj"] == pytest.approx(5 / 36) and row["backward_transfer_adj"] == pytest.approx(5 / 36)
    assert any("items have 2 to 10 options" in w for w in comparison.warnings)


def test_forgetting_excess_by_hand() -> None:
    """8 items, k = 4: n11 = 2, n10 = 1, n01 = 1, n00 = 4. E₀₀ = n00/(N(k − 1)) = 4/24 = 1/6, so F − E₀₀ =
    1/8 − 1/6 = −1/24 (unclipped: fewer flips than guessing on the items both got wrong would make), while
    the published F_adj = max(1/8 − (5/8)(5/8)/3, 0) = 0. Per-item terms 1[1→0] − 1[0→0]/3: one 1, four −1/3,
    three 0; their mean −1/24 and second moment (1 + 4/9)/8 give the Wald half-width."""
    t = Transitions(2, 1, 1, 4, k=4)
    estimate, low, high = t.forgetting_excess
    assert estimate == pytest.approx(-1 / 24)
    half = 1.959963984540054 * math.sqrt(((1 + 4 / 9) / 8 - (1 / 24) ** 2) / 8)
    assert (low, high) == pytest.approx((-1 / 24 - half, -1 / 24 + half))
    assert t.forgetting_adj == 0.0
    assert t.backward_transfer_excess[0] == pytest.approx(-1 / 24)
    free_form = Transitions(2, 1, 1, 4)  # no options: no chance term, the excess is F itself
    assert free_form.forgetting_excess[0] == pytest.approx(1 / 8)
