"""Verdicts (regressed / improved / equivalent / inconclusive) on cells built to be each one.

The CIs are checked here against Tango's (1998) score statistic for a difference of matched proportions,
written out independently of captrack's code (the constrained MLE in closed form): at each end of the
interval the statistic, with its 1/8-item continuity correction, equals ±z.
"""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.verdicts import DEFAULT_MARGIN, combine_changes, paired_change, verdict
from captrack.cli import main
from captrack.gate import GATE_EXIT

FACTS, LOGIC, PASSAGES = "captrack_probe_c1_facts", "captrack_probe_c2_logic", "captrack_probe_c3_passages"
PREMISE, CONSTRAINTS = "captrack_probe_w2_false_premise", "captrack_probe_h1_constraints"


def _pair(n11: int, n10: int, n01: int, n00: int) -> tuple[list[int], list[int]]:
    """Base and variant 0/1 values with exactly these transition counts."""
    base = [1] * n11 + [1] * n10 + [0] * n01 + [0] * n00
    variant = [1] * n11 + [0] * n10 + [1] * n01 + [0] * n00
    return base, variant


# (task, metric, transition counts (n11, n10, n01, n00) in the metric's raw values, the verdict built)
CELLS = [
    (FACTS, "acc", (1300, 20, 20, 660), "equivalent"),  # 2,000 items, 40 flips that cancel
    (LOGIC, "acc", (200, 70, 5, 125), "regressed"),  # a clear drop
    (PASSAGES, "exact_match", (150, 4, 66, 180), "improved"),  # a clear rise
    (PREMISE, "overreach", (40, 5, 80, 275), "regressed"),  # overreach rises: lower is better, so worse
    (CONSTRAINTS, "pass_all", (3, 1, 1, 1), "inconclusive"),  # 6 items: nothing can be said
]


def _tango_statistic(up: int, down: int, n: int, delta: float) -> float:
    """Tango's Z for H0: P(0→1) − P(1→0) = delta, continuity-corrected by 1/8 of an item."""
    a, b, c = 2 * n, -up - down + (2 * n - up + down) * delta, -down * delta * (1 - delta)
    p_down = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    excess = up - down - n * delta
    return math.copysign(max(abs(excess) - 0.125, 0.0), excess) / math.sqrt(n * (2 * p_down + delta * (1 - delta)))


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("verdicts")
    base_tasks, variant_tasks = [], []
    for task, metric, counts, _ in CELLS:
        base, variant = _pair(*counts)
        base_tasks.append(FakeTask(task, {metric: base}))
        variant_tasks.append(FakeTask(task, {metric: variant}))
    write_run(root / "base", "base", base_tasks)
    write_run(root / "sft", "sft", variant_tasks)
    assert main(["compare", "--base", str(root / "base"), "--variant", f"sft={root / 'sft'}:SFT",
                 "--out", str(root / "out"), "--bootstrap", "200"]) == 0
    return root


def test_each_cell_gets_the_verdict_it_was_built_for(compared: Path) -> None:
    drift = pd.read_csv(compared / "out" / "drift.csv").drop_duplicates(["task", "metric"]).set_index("task")
    for task, _, counts, built in CELLS:
        assert drift.loc[task, "verdict"] == built, task
        _, n10, n01, _ = counts
        up, down = (n10, n01) if drift.loc[task, "direction"] == "lower" else (n01, n10)
        n, row = sum(counts), drift.loc[task]
        assert row["oriented_change"] == pytest.approx(100 * (up - down) / n)  # observed, not shrunk
        for low, high, z in ((row["change_ci_low"], row["change_ci_high"], 1.959963984540054),
                             (row["change_ci90_low"], row["change_ci90_high"], 1.6448536269514722)):
            assert low < row["oriented_change"] < high
            assert _tango_statistic(up, down, n, low / 100) == pytest.approx(z, abs=1e-6)
            assert _tango_statistic(up, down, n, high / 100) == pytest.approx(-z, abs=1e-6)
        assert (row["p_value"] < 0.05) == (row["verdict"] in ("regressed", "improved"))
        assert row["change_unit"] == "points" and row["change_method"] == "score"


def test_capability_verdicts_and_the_gate(compared: Path) -> None:
    caps = pd.read_csv(compared / "out" / "capabilities.csv")
    by_key = caps[caps["level"] == "capability"].set_index("key")["verdict"]
    assert by_key[["C1", "C2", "C3", "W2", "H1"]].tolist() == ["equivalent", "regressed", "improved", "regressed",
                                                              "inconclusive"]
    assert caps.set_index("key").loc["W2", "oriented_drift_pct"] < 0 < caps.set_index("key").loc["W2", "mean_rel_drift_pct"]
    report = (compared / "out" / "report.md").read_text()
    assert "equivalent" in report and "inconclusive" in report
    args = ["compare", "--base", str(compared / "base"), "--variant", f"sft={compared / 'sft'}:SFT", "--bootstrap", "0"]
    for fail_on, cells in (("regressed", ["sft C2: regressed", "sft W2: regressed"]),
                           ("inconclusive", ["sft C2: regressed", "sft W2: regressed", "sft H1: inconclusive"])):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            status = main([*args, "--out", str(compared / fail_on), "--fail-on", fail_on])
        assert status == GATE_EXIT
        for cell in cells:
            assert cell in err.getvalue(), (fail_on, cell)
        assert "sft C1" not in err.getvalue() and "sft C3" not in err.getvalue()
    assert main([*args, "--out", str(compared / "wide"), "--margin", "0.5"]) == 0
    wide = pd.read_csv(compared / "wide" / "drift.csv").set_index("task")
    assert wide.loc[FACTS, "verdict"] == "inconclusive"  # ±0.5 points is narrower than its 90% CI


def test_rule_edges() -> None:
    assert verdict((-3.0, -0.1), (-2.5, -0.5), 5) == "regressed"
    assert verdict((0.1, 3.0), (0.5, 2.5), 5) == "improved"
    assert verdict((-4.0, 4.0), (-4.9, 4.9), 5) == "equivalent"
    assert verdict((-4.0, 4.0), (-5.0, 4.9), 5) == "inconclusive"  # the margin itself is outside
    assert verdict((0.5, 2.0), (0.7, 1.8), 5, oriented=False) == "changed"
    assert verdict((math.nan, 1.0), (0.0, 1.0), 5) == ""


def test_no_flip_among_six_items_is_not_evidence_of_equivalence() -> None:
    base = np.array([1.0, 1.0, 0.0, 1.0, 0.0, 1.0])
    change = paired_change(base, base.copy(), "binary", "higher", DEFAULT_MARGIN)
    assert change.delta == 0 and change.verdict == "inconclusive" and change.ci90[1] > 15
    many = np.tile(base, 400)
    assert paired_change(many, many.copy(), "binary", "higher", DEFAULT_MARGIN).verdict == "equivalent"


def test_clusters_widen_the_interval_of_correlated_items() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 2, 400).astype(float)
    variant = base.copy()
    variant[:40] = 1 - variant[:40]  # 40 flips, all in the first 4 clusters of 10
    clusters = [i // 10 for i in range(400)]
    plain = paired_change(base, variant, "binary", "higher", 5)
    clustered = paired_change(base, variant, "binary", "higher", 5, clusters)
    assert clustered.se > plain.se


def test_capability_change_is_the_mean_of_oriented_members() -> None:
    up = (np.zeros(100), np.ones(100))
    members = [("t1", *up, "binary", "higher"), ("t2", *up, "binary", "lower"), ("t3", *up, "count", "neutral")]
    change = combine_changes(members, 5)
    assert change.delta == pytest.approx(0.0)  # +100 and −100 points, the neutral member left out


def test_cluster_flag_resamples_clusters_and_widens_the_cis(tmp_path: Path) -> None:
    """40 items in 4 clusters of 10; the variant flips whole clusters: items are not independent."""
    docs = {i: {"question": f"q{i}", "src": f"source-{i // 10}"} for i in range(40)}
    base = ([1] * 7 + [0] * 3) * 4  # every cluster has a right answer: no resample of clusters has a base of 0
    variant = [0] * 10 + base[10:20] + [1] * 10 + base[30:]  # cluster 0 forgotten, cluster 2 gained
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": base}, docs=docs)])
    write_run(tmp_path / "v", "v", [FakeTask(FACTS, {"acc": variant}, docs=docs)])
    widths = {}
    for name, extra in (("plain", []), ("clustered", ["--cluster", "src"])):
        assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}",
                     "--out", str(tmp_path / name), "--bootstrap", "400", *extra]) == 0
        row = pd.read_csv(tmp_path / name / "drift.csv").iloc[0]
        widths[name] = (row["ci_high"] - row["ci_low"], row["change_ci_high"] - row["change_ci_low"])
    assert widths["clustered"][0] > widths["plain"][0]  # bootstrap over clusters
    assert widths["clustered"][1] > widths["plain"][1]  # cluster-robust verdict interval


def test_an_interval_of_a_bounded_metric_never_passes_a_hundred_points() -> None:
    """Issue 40 (low): a Wald interval of a [0, 1] score on two items reached past ±100 points."""
    change = paired_change(np.array([0.0, 0.0]), np.array([1.0, 0.9]), "score", "higher", 5.0)
    assert -100.0 <= change.ci95[0] and change.ci95[1] <= 100.0 and change.ci90[1] <= 100.0
    clustered = paired_change(np.array([1.0, 0, 1, 0]), np.array([0.0, 0, 1, 0]), "binary", "higher", 5.0, [0, 0, 1, 1])
    assert clustered.ci95 == (-100.0, 100.0)  # two clusters: t(1) is wide, but a rate moves at most 100 points


def test_keyed_sums_match_pandas_whether_keys_repeat_or_not() -> None:
    """The capability covariance's per-key sums: numpy where no key repeats, pandas' groupby (its compensated sums)
    where keys repeat; both as sorted unique keys with their sums, as pandas gives them."""
    import numpy as np
    import pandas as pd

    from captrack.analysis.verdicts import _keyed

    rng = np.random.default_rng(5)
    for keys in (["gsm8k-test-3", "gsm8k-test-10", "gsm8k-test-1", "a"], ["c\x1f2", "c\x1f1", "c\x1f2", "c\x1f1", "c\x1f9"]):
        values = rng.normal(size=len(keys))
        expected = pd.Series(values, index=keys).groupby(level=0).sum()
        got_keys, got_sums = _keyed(keys, values)
        assert list(got_keys) == list(expected.index)
        assert got_sums.tobytes() == expected.to_numpy(dtype=float).tobytes()


def _intersected_variance(used: list, changes: list, sources: dict) -> float:
    """_combined_variance as written before (numpy's intersect1d per pair of members): the reference."""
    from captrack.analysis.verdicts import _keyed, _variance_terms

    total, shares = 0.0, []
    for (task, _, _, kind, _), d in zip(used, changes, strict=True):
        total += _variance_terms(d, kind != "count", None)[1]
        shares.append(_keyed([str(s) for s in sources[task]], (d - d.mean()) / d.size))
    for i in range(len(shares)):
        for j in range(i + 1, len(shares)):
            _, at, bt = np.intersect1d(shares[i][0], shares[j][0], assume_unique=True, return_indices=True)
            total += 2.0 * float(np.dot(shares[i][1][at], shares[j][1][bt]))
    return max(total, 0.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_members_sharing_source_items_covary_as_with_numpys_intersection(seed: int) -> None:
    """Members matched by source id (some shared, some repeated, some their own): the variance is bit for bit
    the one numpy's sorted intersection gave."""
    from captrack.analysis.verdicts import _combined_variance, item_changes

    rng = np.random.default_rng(seed)
    used, sources = [], {}
    for t in range(6):
        n = int(rng.integers(5, 40))
        ids = [f"src-{rng.integers(0, 30)}" if rng.random() < 0.7 else f"\x1fown{t}-{i}" for i in range(n)]
        sources[f"task{t}"] = ids
        used.append((f"task{t}", rng.integers(0, 2, n).astype(float), rng.integers(0, 2, n).astype(float), "binary",
                     "higher"))
    changes = [item_changes(m[1], m[2], m[3], m[4]) for m in used]
    ours = _combined_variance(used, changes, None, sources)
    assert np.float64(ours).tobytes() == np.float64(_intersected_variance(used, changes, sources)).tobytes()
