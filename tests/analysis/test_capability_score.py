"""A capability of a few small 0/1 members: the stratified score interval (issue 53, item 3)."""

from __future__ import annotations

import numpy as np
import pytest

from captrack.analysis.capability_score import capability_statistic
from captrack.analysis.intervals import z_quantile
from captrack.analysis.verdicts import combine_changes, paired_change


def _pair(gains: int, losses: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rest = n - gains - losses
    base = np.r_[np.ones(losses), np.zeros(gains), np.arange(rest) % 2].astype(float)
    variant = np.r_[np.zeros(losses), np.ones(gains), np.arange(rest) % 2].astype(float)
    return base, variant


def _members(tables: list[tuple[int, int, int]]) -> list[tuple[str, np.ndarray, np.ndarray, str, str]]:
    return [(f"t{i}", *_pair(g, lo, n), "binary", "higher") for i, (g, lo, n) in enumerate(tables)]


def test_two_small_members_that_lost_little_are_not_called_equivalent_to_a_margin_loss() -> None:
    """2 × 80 items, each losing 2 (Δ = −2.5): the summed Agresti–Min Wald interval's 90% CI was [−4.93, −0.07],
    inside the margin, so a capability whose true loss is 5 points was called equivalent in 9.4% of samples."""
    change = combine_changes(_members([(0, 2, 80), (0, 2, 80)]), 5.0)
    assert change.method == "stratified-score"
    assert change.ci90[0] < -5.0
    assert change.verdict == "inconclusive"


def test_the_interval_is_the_inversion_of_its_statistic() -> None:
    rng = np.random.default_rng(2)
    for _ in range(60):
        m = int(rng.integers(2, 5))
        ns = rng.integers(20, 300, m)
        gains = (rng.random(m) * ns * rng.choice([0.0, 0.1, 0.3])).astype(int)
        losses = (rng.random(m) * (ns - gains) * 0.3).astype(int)
        change = combine_changes(_members([(int(g), int(lo), int(n)) for g, lo, n in zip(gains, losses, ns, strict=True)]),
                                 5.0)
        for level, limits in ((0.95, change.ci95), (0.90, change.ci90)):
            for limit in limits:
                assert abs(capability_statistic(gains[None], losses[None], ns[None], limit)[0]) == pytest.approx(
                    z_quantile(level), abs=1e-6)
        significant = change.ci95[0] > 0 or change.ci95[1] < 0
        assert (change.p_value < 0.05) == significant  # one test, two faces
        assert change.delta == pytest.approx(float(np.mean(100.0 * (gains - losses) / ns)))


def test_nothing_moved_is_no_evidence_of_a_change_and_members_of_other_kinds_keep_their_variance() -> None:
    still = combine_changes(_members([(0, 0, 100), (0, 0, 100)]), 5.0)
    assert still.delta == 0.0 and still.p_value == 1.0 and still.ci95[0] < 0.0 < still.ci95[1]
    assert still.verdict == "equivalent"
    rng = np.random.default_rng(0)
    words = rng.normal(50.0, 5.0, 100)
    mixed = [*_members([(3, 4, 100)]), ("t_words", words, words * 1.01, "count", "higher")]
    change = combine_changes(mixed, 5.0)
    assert change.method == "stratified-score" and change.ci95[0] < change.delta < change.ci95[1]
    scores = [("a", rng.random(100), rng.random(100), "score", "higher"), ("b", rng.random(100), rng.random(100),
                                                                           "score", "higher")]
    assert combine_changes(scores, 5.0).method == "wald"  # no 0/1 member: the Wald interval as before


def test_one_member_is_still_the_single_task_interval() -> None:
    base, variant = _pair(1, 6, 90)
    one = combine_changes([("t", base, variant, "binary", "higher")], 5.0)
    assert one == paired_change(base, variant, "binary", "higher", 5.0)
