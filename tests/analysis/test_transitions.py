"""Transition counts, F/BT and chance adjustment against hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from captrack.analysis.stats import bh_qvalues, mcnemar_exact
from captrack.analysis.transitions import Transitions, count_transitions

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
