"""Verdicts keep their nominal error rates: a fast subset of tests/benchmarks/bench_calibration.py.

The exact figures enumerate every (gains, losses) table of independent 0/1 items with the interval
paired_change uses; the Monte-Carlo ones run compare's own functions on simulated items with a fixed seed
(the full grid, with its MC standard errors: `python tests/benchmarks/bench_calibration.py`).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.intervals import score_interval, score_limits, score_pvalue
from captrack.analysis.verdicts import failing_cells, holm_rejected, paired_change
from captrack.cli import main
from captrack.gate import GATE_EXIT


def _bench() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "bench_calibration.py"
    spec = importlib.util.spec_from_file_location("bench_calibration", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def test_the_vectorised_interval_is_the_one_paired_change_uses() -> None:
    rng = np.random.default_rng(1)
    n = rng.integers(1, 3000, 300)
    gains = (rng.random(300) * n * 0.3).astype(int)
    losses = (rng.random(300) * (n - gains) * 0.3).astype(int)
    low, high = score_interval(gains, losses, n)
    for i in range(300):
        assert score_limits(int(gains[i]), int(losses[i]), int(n[i])) == pytest.approx((low[i], high[i]), abs=1e-9)
        change = paired_change(np.r_[np.ones(losses[i]), np.zeros(gains[i]), np.zeros(n[i] - gains[i] - losses[i])],
                               np.r_[np.zeros(losses[i]), np.ones(gains[i]), np.zeros(n[i] - gains[i] - losses[i])],
                               "binary", "higher", 5.0)
        assert (change.p_value < 0.05) == (change.ci95[0] > 0 or change.ci95[1] < 0)  # one test, two faces
        assert change.p_value == pytest.approx(float(score_pvalue(gains[i], losses[i])))


@pytest.mark.parametrize(("n", "gain", "loss", "check", "bound"), [
    (100, 0.0, 0.05, "equivalent", 5.5),  # the audit's 11.8%: 5% of 100 items forgotten, none gained
    (75, 0.0, 0.05, "equivalent", 5.5),  # 10.6% before
    (150, 0.0, 0.05, "equivalent", 5.5),  # plain Tango's worst cell, 5.48%
    (100, 0.0, 0.02, "coverage95", 93.0),  # 86.4% before: one-way flips, about two expected
    (400, 0.0, 0.005, "coverage95", 93.0),
    (30, 0.0, 0.3, "coverage95", 93.0),  # plain Tango's worst, 92.98%
    (100, 0.15, 0.15, "regressed", 2.6),  # the null, per side
    (75, 0.15, 0.15, "regressed", 2.6),
])
def test_exact_rates_on_the_audits_cells(n: int, gain: float, loss: float, check: str, bound: float) -> None:
    value = BENCH.exact_binary(n, gain, loss)[check]
    assert value >= bound if check == "coverage95" else value <= bound


def test_the_gate_keeps_its_family_wise_error_on_fourteen_unchanged_capabilities() -> None:
    [row] = list(BENCH.gate_rows(np.random.default_rng(7), 120))
    assert row.value <= 5.0  # 27.8% before (no multiplicity control); Holm at 2.5% here


def test_holm_steps_down() -> None:
    assert holm_rejected([0.001, 0.02, 0.5], alpha=0.025) == [True, False, False]  # 0.02 > 0.025/2
    assert holm_rejected([0.001, 0.011, 0.5], alpha=0.025) == [True, True, False]
    assert holm_rejected([float("nan"), 0.001], alpha=0.025) == [False, True]


def test_a_task_outside_the_taxonomy_that_regressed_fails_the_gate() -> None:
    drift = pd.DataFrame([{"variant": "sft", "task": "my_task", "metric": "acc", "capability": "", "verdict": "regressed",
                           "oriented_change": -50.0, "change_ci_low": -60.0, "change_ci_high": -40.0, "p_value": 1e-12}])
    capabilities = pd.DataFrame([{"variant": "sft", "level": "capability", "key": "C1", "verdict": "equivalent",
                                  "oriented_change": 0.0, "change_ci_low": -2.0, "change_ci_high": 2.0, "p_value": 1.0}])
    [cell] = failing_cells(capabilities, "regressed", drift)
    assert cell.startswith("sft my_task/acc (not in the taxonomy): regressed, change -50.0")
    assert failing_cells(capabilities, "regressed") == []  # without the drift table only C1 is checked


def test_the_gate_fails_a_regressed_task_outside_the_taxonomy_end_to_end(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    base, variant = [1] * 60 + [0] * 40, [1] * 10 + [0] * 90  # fell 50 points
    write_run(tmp_path / "base", "base", [FakeTask("my_own_task", {"acc": base})])
    write_run(tmp_path / "v", "v", [FakeTask("my_own_task", {"acc": variant})])
    status = main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}", "--out",
                   str(tmp_path / "out"), "--bootstrap", "0", "--fail-on", "regressed"])
    assert status == GATE_EXIT
    assert "my_own_task/acc (not in the taxonomy): regressed" in capsys.readouterr().err


def test_clusters_cover_with_six_of_them_and_never_narrow_the_interval() -> None:
    rows = list(BENCH.cluster_rows(np.random.default_rng(3), 250))
    assert min(row.value for row in rows) >= 93.0, [(r.cell, r.value) for r in rows]
    rng = np.random.default_rng(0)
    for _ in range(50):  # the same items with any 2-4 cluster labels: never narrower than without
        base = (rng.random(40) < 0.5).astype(float)
        variant = np.where(rng.random(40) < 0.2, 1 - base, base)
        labels = list(rng.integers(0, int(rng.integers(2, 5)), 40))
        plain, clustered = (paired_change(base, variant, "binary", "higher", 5.0, c) for c in (None, labels))
        assert clustered.ci95[0] <= plain.ci95[0] and clustered.ci95[1] >= plain.ci95[1]


def test_a_single_cluster_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = {i: {"question": f"q{i}", "src": "one"} for i in range(40)}
    write_run(tmp_path / "base", "base", [FakeTask("captrack_probe_c1_facts", {"acc": [1] * 20 + [0] * 20}, docs=docs)])
    write_run(tmp_path / "v", "v", [FakeTask("captrack_probe_c1_facts", {"acc": [0] * 20 + [0] * 20}, docs=docs)])
    status = main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}", "--out",
                   str(tmp_path / "out"), "--bootstrap", "50", "--cluster", "src"])
    assert status == 1
    assert "needs at least 2 clusters" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_forgetting_excess_is_unbiased_where_the_published_form_is_not() -> None:
    rows = {(r.check, r.cell): r for r in BENCH.excess_rows(np.random.default_rng(11), 150) if "n=2000" in r.cell}
    for (check, cell), row in rows.items():
        if check.startswith("excess"):
            assert abs(row.value) <= 0.3, (cell, row.value)
    assert rows[("fadj_bias MC (published, no target)", "same a=0.6 k=4 n=2000")].value > 4.0  # a·F_chance


def test_the_flag_is_the_verdict_and_stays_quiet_at_small_n_p0() -> None:
    for n, p0 in ((30, 0.02), (100, 0.02), (30, 0.05)):
        h = min(0.05, 0.4 * p0)
        mc = BENCH.mc_binary(np.random.default_rng(5), 400, n, p0, h, h)
        assert mc["regressed"][0] + mc["improved"][0] <= 5.0  # 12.1%, 8.8%, 10.6% with the bootstrap flag
        assert mc["ratio_coverage"][0] >= 93.0


def test_three_clusters_widen_both_intervals_and_say_so(tmp_path: Path) -> None:
    """Issue 40: the same 400 items with a field of 3 values went from `equivalent [−5.19, +0.22]` to
    `regressed [−2.98, −2.00]` under --cluster; clusters may only widen the intervals, and few are warned about."""
    rng = np.random.default_rng(4)
    base = (rng.random(400) < 0.6).astype(int)
    variant = np.where(rng.random(400) < 0.06, 1 - base, base)
    variant[:8] = 0
    docs = {i: {"question": f"q{i}", "src": f"s{i % 3}"} for i in range(400)}
    write_run(tmp_path / "base", "base", [FakeTask("captrack_probe_c1_facts", {"acc": base.tolist()}, docs=docs)])
    write_run(tmp_path / "v", "v", [FakeTask("captrack_probe_c1_facts", {"acc": variant.tolist()}, docs=docs)])
    rows = {}
    for name, extra in (("plain", []), ("clustered", ["--cluster", "src"])):
        assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}", "--out",
                     str(tmp_path / name), "--bootstrap", "300", *extra]) == 0
        rows[name] = pd.read_csv(tmp_path / name / "drift.csv").iloc[0]
    plain, clustered = rows["plain"], rows["clustered"]
    for low, high in (("change_ci_low", "change_ci_high"), ("ci_low", "ci_high")):
        assert clustered[low] <= plain[low] and clustered[high] >= plain[high], low
    assert clustered["change_method"] == "score+cluster-robust"
    summary = (tmp_path / "clustered" / "summary.json").read_text()
    assert "fewer than 20 clusters" in summary


@pytest.mark.parametrize(("ns", "before"), [((80, 80), 9.39), ((95, 95), 8.03), ((66, 66, 66), 6.61), ((50,) * 4, 6.23)])
def test_a_capability_of_a_few_small_members_keeps_the_size_of_its_equivalence_test(ns: tuple[int, ...],
                                                                                      before: float) -> None:
    """Issue 53: the audit's worst cells of the summed Agresti–Min Wald interval (5% of each member forgotten)."""
    assert BENCH.exact_members(ns, 0.0, 0.05, wald=True)["equivalent"] == pytest.approx(before, abs=0.02)
    rates = BENCH.exact_members(ns, 0.0, 0.05)
    assert rates["equivalent"] <= 5.5
    assert rates["coverage95"] >= 93.0


def test_replicates_are_tested_on_item_means() -> None:
    """Issue 53: with 3–5 seeds and an item-specific change, pooled pairs gave mcnemar_p < 0.05 in 9–15% of null
    variants and an F − E00 CI covering 85–91%; a smoke run of the section (the full one: --sections replicates)."""
    rows = list(BENCH.replicate_rows(np.random.default_rng(5), 50))
    ours = {(row.check, row.cell): row.value for row in rows if "pooled" not in row.check}
    pooled = {(row.check, row.cell): row.value for row in rows if "pooled" in row.check}
    assert max(v for (check, _), v in ours.items() if check.startswith("replicate_mcnemar")) <= 8.0
    assert min(v for (check, _), v in ours.items() if check.startswith("replicate_excess")) >= 91.0
    assert max(v for (check, cell), v in pooled.items() if check.startswith("replicate_mcnemar") and "swap" in cell) > 11.0
