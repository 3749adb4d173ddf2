"""Item-level algorithm contrasts: F_adj and 1 − BC differences with paired bootstrap CIs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from captrack.analysis.contrasts import MEASURE_COLUMNS, item_contrasts
from captrack.report.findings import measure_sentence

N = 200


def _inputs(forget_a: float, forget_b: float, bc_a: float, bc_b: float) -> tuple[dict, pd.DataFrame, dict]:
    base = np.ones(N)
    items = {("a", "t", "acc"): (base, (np.arange(N) >= forget_a * N).astype(float)),
             ("b", "t", "acc"): (base, (np.arange(N) >= forget_b * N).astype(float))}
    transitions = pd.DataFrame({"variant": ["a", "b"], "task": "t", "metric": "acc", "k": [2, 2],
                                "forgetting_adj": [forget_a, forget_b]})
    rng = np.random.default_rng(0)
    dist = pd.DataFrame({"variant": ["a"] * N + ["b"] * N, "task": "t", "doc_hash": [f"h{i}" for i in range(N)] * 2,
                         "bhattacharyya": np.r_[bc_a + rng.uniform(-.01, .01, N), bc_b + rng.uniform(-.01, .01, N)]})
    one_minus_bc = {(v, "t"): 1.0 - frame.sort_values("doc_hash", kind="stable")["bhattacharyya"].to_numpy()
                    for v, frame in dist.groupby("variant")}  # as captrack.analysis.item_spool keeps them
    return items, transitions, one_minus_bc


def _contrast(**kwargs: float) -> pd.Series:
    pairs = pd.DataFrame({"algorithm_a": ["SFT"], "algorithm_b": ["DPO"]})
    items, transitions, dist = _inputs(**kwargs)
    return item_contrasts(pairs, {"a": "SFT", "b": "DPO"}, items, transitions, dist, 500, 0).iloc[0]


def test_a_clear_difference_in_forgetting_and_distribution_movement_has_a_ci_excluding_zero() -> None:
    row = _contrast(forget_a=0.4, forget_b=0.05, bc_a=0.7, bc_b=0.95)
    assert list(row.index[-len(MEASURE_COLUMNS):]) == MEASURE_COLUMNS
    assert math.isclose(row["f_adj_a"], 0.4) and math.isclose(row["f_adj_b"], 0.05)
    assert row["f_adj_ci_low"] > 0
    assert math.isclose(row["one_minus_bc_difference"], 0.25, abs_tol=0.01) and row["one_minus_bc_ci_low"] > 0


def test_equal_algorithms_get_a_ci_that_includes_zero_and_no_ordering() -> None:
    row = _contrast(forget_a=0.2, forget_b=0.2, bc_a=0.9, bc_b=0.9)
    assert row["f_adj_ci_low"] <= 0 <= row["f_adj_ci_high"]
    said = measure_sentence("SFT", "DPO", "f_adj", row["f_adj_difference"], row["f_adj_ci_low"], row["f_adj_ci_high"])
    assert said is not None and said.startswith("The data cannot order SFT and DPO")


def test_an_ordering_is_stated_only_when_the_ci_excludes_zero() -> None:
    said = measure_sentence("DPO", "SFT", "one_minus_bc", -0.1, -0.15, -0.05)
    assert said is not None and said.startswith("SFT has more option-distribution movement 1 − BC than DPO")
    assert measure_sentence("DPO", "SFT", "f_adj", math.nan, math.nan, math.nan) is None
