"""The board's per-algorithm interval (captrack.analysis.algorithm_interval): none from fewer than 3 variants, t
quantiles from 3, and the error of the base every variant shares counted through the joint item bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from captrack.analysis.algorithm_interval import (
    algorithm_interval,
    capability_samples,
    shared_covariance,
)
from captrack.analysis.board_summary import ALGORITHM_COLUMNS, algorithm_summary
from captrack.analysis.bootstrap import bootstrap_drift
from captrack.analysis.intervals import t_quantile


@pytest.mark.parametrize("k", [1, 2])
def test_no_interval_from_fewer_than_three_variants(k: int) -> None:
    got = algorithm_interval(np.arange(k, dtype=float), np.ones((k, 50)))
    assert math.isnan(got.low) and math.isnan(got.high)
    assert got.note.startswith(f"none: {k} variant")
    assert ("a checkpoint, not an algorithm" in got.note) == (k == 1)


def test_three_variants_take_t2_on_their_spread_and_z_on_the_shared_error() -> None:
    values = np.array([-3.0, 1.0, 5.0])
    rng = np.random.default_rng(0)
    samples = rng.standard_normal((3, 4000)) + rng.standard_normal(4000)  # rows covary by 1 through a common part
    shared = shared_covariance(samples)
    got = algorithm_interval(values, samples)
    between = values.var(ddof=1) / 3
    half = math.sqrt(t_quantile(0.95, 2) ** 2 * between + 1.959963984540054**2 * shared)
    assert got.low == pytest.approx(1.0 - half) and got.high == pytest.approx(1.0 + half)
    assert shared == pytest.approx(1.0, abs=0.1) and got.df == 2
    assert got.high - got.low > 2 * 4.0 * math.sqrt(between)  # t(2) = 4.30: the z version's 1.96 was 2.2 times too narrow


def test_a_shared_base_error_widens_the_interval() -> None:
    values = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    common = np.random.default_rng(1).normal(0.0, 3.0, 2000)
    samples = np.vstack([common + v for v in values])  # the base's error moves every variant alike
    got = algorithm_interval(values, samples)
    assert shared_covariance(samples) == pytest.approx(common.var(ddof=1))
    assert got.shared_se == pytest.approx(common.std(ddof=1))
    assert got.between_se == pytest.approx(math.sqrt(values.var(ddof=1) / 5))
    assert got.high - got.low > 2 * 1.96 * 3.0 * 0.99  # at least the shared error's own interval
    plain = 2 * t_quantile(0.95, 4) * math.sqrt(values.var(ddof=1) / 5)  # mean ± t(4)·s/√k, the base's error left out
    assert got.high - got.low > 2 * plain


def test_the_joint_bootstrap_shares_the_base_items() -> None:
    """bootstrap_drift resamples a task's items with one index for every variant, so two variants paired with the
    same base covary through it; capability_samples averages members per resample."""
    rng = np.random.default_rng(2)
    base = (rng.random(200) < 0.6).astype(float)
    items = {(f"v{j}", "t", "acc"): (base, np.where(rng.random(200) < 0.1, 1 - base, base)) for j in range(3)}
    boot = bootstrap_drift(items, 300, seed=0)
    drift = pd.DataFrame({"variant": ["v0", "v1", "v2", "v0"], "task": ["t", "t", "t", "t"],
                          "metric": ["acc"] * 4, "capability": ["C1", "C1", "C1", ""]})
    samples = capability_samples(drift, boot)
    assert set(samples) == {("v0", "C1"), ("v1", "C1"), ("v2", "C1")}
    assert np.allclose(samples[("v0", "C1")], boot[("v0", "t", "acc")], atol=1e-4)
    assert shared_covariance(np.vstack(list(samples.values()))) > 0


def _caps(variants: dict[str, str], drift: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "algorithm": a, "level": "capability", "key": "C1", "mean_rel_drift_pct": drift[v],
                          "ci_low": drift[v] - 1, "ci_high": drift[v] + 1, "forgetting": 0.1, "backward_transfer": 0.0}
                         for v, a in variants.items()])


def test_algorithm_summary_draws_from_three_variants_and_says_why_not_below() -> None:
    caps = _caps({"a1": "SFT", "a2": "SFT", "a3": "SFT", "b1": "DPO", "c1": "RL", "c2": "RL"},
                 {"a1": -4.0, "a2": -2.0, "a3": -3.0, "b1": 1.0, "c1": 0.0, "c2": 2.0})
    rng = np.random.default_rng(3)
    samples = {(v, "C1"): rng.standard_normal(500).astype(np.float32) for v in caps["variant"]}
    table = algorithm_summary(caps, samples=samples).set_index("algorithm")
    assert list(table.reset_index().columns) == ALGORITHM_COLUMNS
    assert table.loc["SFT", "ci_low"] < -3.0 < table.loc["SFT", "ci_high"]
    assert table.loc["SFT", "ci_note"].startswith("t(2) on 3 variants")
    assert math.isnan(table.loc["DPO", "ci_low"]) and "a checkpoint, not an algorithm" in table.loc["DPO", "ci_note"]
    assert math.isnan(table.loc["RL", "ci_high"]) and table.loc["RL", "ci_note"].startswith("none: 2 variants")
    without = algorithm_summary(caps).set_index("algorithm")  # no resamples: no shared term, so no interval
    assert math.isnan(without.loc["SFT", "ci_low"]) and "no item resamples" in without.loc["SFT", "ci_note"]
    scores = algorithm_summary(caps, aggregate_only=True, samples=samples).set_index("algorithm")
    assert math.isnan(scores.loc["SFT", "ci_low"]) and scores.loc["SFT", "ci_note"] == "none: aggregate scores"
