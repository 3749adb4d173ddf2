"""transitions.csv with several seeds: mcnemar_p and the excess CIs on item means, not pooled pairs (issue 53, item 6)."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.stats import mcnemar_exact, sign_flip_pvalue
from captrack.analysis.transitions import Transitions, count_transitions, seed_item_tests
from captrack.cli import main


def test_the_sign_flip_test_is_mcnemars_at_one_seed_and_exact_at_several() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n10, n01 = (int(x) for x in rng.integers(0, 400, 2))
        changes = np.r_[-np.ones(n10), np.ones(n01), np.zeros(7)].astype(np.int64)
        assert sign_flip_pvalue(changes) == pytest.approx(mcnemar_exact(n10, n01), rel=1e-12)
    for _ in range(100):  # every sign pattern enumerated
        changes = rng.integers(-3, 4, int(rng.integers(1, 11)))
        moved = np.abs(changes[changes != 0])
        observed = abs(int(changes.sum()))
        extreme = sum(abs(int(np.dot(signs, moved))) >= observed for signs in itertools.product((-1, 1), repeat=moved.size))
        assert sign_flip_pvalue(changes) == pytest.approx(min(1.0, extreme / 2**moved.size), abs=1e-12)
    assert sign_flip_pvalue(np.zeros(5, dtype=np.int64)) == 1.0


def test_one_seed_gives_the_pooled_figures() -> None:
    rng = np.random.default_rng(1)
    before, after = rng.random((300, 1)) < 0.6, rng.random((300, 1)) < 0.55
    t = count_transitions(before[:, 0].astype(float), after[:, 0].astype(float))
    t = Transitions(t.n_11, t.n_10, t.n_01, t.n_00, k=4)
    tests = seed_item_tests(before, after, t.chance_weight_value)
    assert tests["mcnemar_p"] == pytest.approx(mcnemar_exact(t.n_10, t.n_01), rel=1e-12)
    for name, (mean, low, high) in (("forgetting_excess", t.forgetting_excess),
                                    ("backward_transfer_excess", t.backward_transfer_excess)):
        assert (tests[name], tests[f"{name}_ci_low"], tests[f"{name}_ci_high"]) == pytest.approx((mean, low, high))


def test_an_items_change_repeated_by_every_seed_counts_once(tmp_path: Path) -> None:
    """12 of 40 items changed in all 3 seeds, 10 of them forgotten: pooled as 120 pairs, McNemar saw 30 losses
    against 6 gains (p = 5e-5); the items are 12 independent changes, 10 one way (p = 2 · 79/4096 = 0.039)."""
    base = np.r_[np.ones(10), np.zeros(2), np.ones(14), np.zeros(14)]
    variant = np.r_[np.zeros(10), np.ones(2), np.ones(14), np.zeros(14)]
    for name, values in (("base", base), ("v", variant)):
        for seed in (1, 2, 3):
            write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_skills", {"exact_match": values.tolist()},
                                                       output_type="generate_until")],
                      seed=seed, date_id=f"2026-01-01T00-00-0{seed}.000000")
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}", "--out",
                 str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    row = pd.read_csv(tmp_path / "out" / "transitions.csv").iloc[0]
    assert (row["n"], row["n_10"], row["n_01"]) == (120, 30, 6)
    assert row["mcnemar_p"] == pytest.approx(2 * 79 / 4096, rel=1e-9)
    before, after = (np.repeat(x[:, None], 3, axis=1) > 0.5 for x in (base, variant))
    tests = seed_item_tests(before, after, 0.0)
    assert row["forgetting_excess"] == pytest.approx(0.25)
    assert (row["forgetting_excess_ci_low"], row["forgetting_excess_ci_high"]) == pytest.approx(
        (tests["forgetting_excess_ci_low"], tests["forgetting_excess_ci_high"]))
    half = 1.959963984540054 * np.sqrt(0.25 * 0.75 / 40)  # 40 items, not 120 pairs
    assert row["forgetting_excess_ci_high"] - row["forgetting_excess"] == pytest.approx(half)

