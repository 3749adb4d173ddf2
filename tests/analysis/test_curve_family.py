"""first_step_significant is controlled over the K steps a trajectory examines (issue 53, item 1): the window scan
of captrack.analysis.curve_windows (max-T over windows of consecutive steps) at a family-wise 5%, so an unchanged
model is flagged in at most about 5% of trajectories instead of 1 − 0.95^K. Holm over the steps' own p-values, the
rule it replaced, stays as curve_stats.first_significant_step for the harness's comparison."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from fakeruns import FakeTask, write_run

from captrack.analysis.curve_stats import first_significant_step
from captrack.analysis.intervals import score_pvalue
from captrack.cli import main

FACTS = "captrack_probe_c1_facts"
N = 100  # items 0-59 right in the base, 60-99 wrong
# step -> (gains, losses): step 10 alone is significant at 5% (p = 0.023), not after the control over 4 steps;
# step 30 is (p = 5e-8).
STEPS = {10: (2, 10), 20: (1, 1), 30: (0, 30), 40: (1, 1)}

_SPEC = importlib.util.spec_from_file_location("bench_calibration",
                                               Path(__file__).parents[1] / "benchmarks" / "bench_calibration.py")
assert _SPEC is not None and _SPEC.loader is not None
BENCH = importlib.util.module_from_spec(_SPEC)
sys.modules["bench_calibration"] = BENCH
_SPEC.loader.exec_module(BENCH)


def _acc(gains: int, losses: int) -> list[float]:
    """The base's 60 right items with the first `losses` wrong, its 40 wrong ones with the first `gains` right."""
    return [0.0 if i < losses else 1.0 for i in range(60)] + [1.0 if i < gains else 0.0 for i in range(40)]


def _cli(*args: str) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    assert status == 0, buffer.getvalue()


def test_a_step_significant_only_alone_is_not_the_first_significant_step(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": _acc(0, 0)})])
    _cli("ingest", str(tmp_path / "base"), "--store", str(store), "--name", "base")
    for step, (gains, losses) in STEPS.items():
        write_run(tmp_path / f"s{step}", f"sft-{step}", [FakeTask(FACTS, {"acc": _acc(gains, losses)})])
        _cli("ingest", str(tmp_path / f"s{step}"), "--store", str(store), "--name", "sft", "--step", str(step))
    _cli("compare", "--store", str(store), "--base", "base", "--variant", "sft:SFT", "--out", str(tmp_path / "out"),
         "--bootstrap", "0")
    curves = pd.read_csv(tmp_path / "out" / "curves.csv")
    caps = curves[(curves["level"] == "capability") & (curves["key"] == "C1")].set_index("step")
    assert caps.loc[10, "verdict"] == "regressed"  # step 10's own 5% verdict fires
    row = pd.read_csv(tmp_path / "out" / "curve_summary.csv").set_index("capability").loc["C1"]
    assert row["first_step_significant"] == 30 and row["n_steps"] == len(STEPS)
    expected = [float(score_pvalue(g, lo)) for g, lo in STEPS.values()]
    assert np.allclose(caps["p_value"], expected, rtol=1e-9)  # the verdicts' own p-values are in curves.csv
    report = (tmp_path / "out" / "report.md").read_text()
    assert "max-T over windows of its K steps" in report and "30 (K = 4)" in report
    assert "first step significant after control over K steps (windows of consecutive steps, max-T)" in report


def test_holm_over_the_steps_decides_in_step_order() -> None:
    steps = [1, 2, 3]
    assert first_significant_step(steps, ["regressed"] * 3, [0.06, 0.01, 0.001]) == 2  # .001 ≤ .05/3, .01 ≤ .05/2, .06 > .05
    assert first_significant_step(steps, ["regressed"] * 3, [0.04, 0.03, 0.02]) is None
    assert first_significant_step(steps, ["improved", "inconclusive", "regressed"], [0.001, 0.5, 0.002]) == 1
    assert first_significant_step([5], ["regressed"], [0.049]) == 5  # one step: the end point's verdict
    assert first_significant_step(steps, ["", "regressed", "regressed"], [float("nan"), 0.02, 0.02]) == 2  # K = 2


def test_null_trajectories_are_flagged_at_most_about_five_percent() -> None:
    """Two of the harness's trajectory cells at a small R (all of them at R = 2,000: bench_calibration.py)."""
    rng = np.random.default_rng(8)
    null = BENCH.curve_rates(rng, 150, 1, 300, 10)
    assert null["raw"][0] >= 25.0  # each step's own 5% rule: about 1 − 0.95^10 = 40%
    for rule in ("scan", "holm", "spending"):
        value, se = null[rule]
        assert value <= 6.0 + 2 * se, (rule, value)
    power = BENCH.curve_rates(rng, 80, 1, 300, 10, onset=5)
    assert power["scan"][0] >= 85.0 - 2 * power["scan"][1]
    assert power["scan"][0] > power["holm"][0]  # the scan gathers a sustained change's evidence over its steps
    assert power["before_onset"][0] <= 6.0 + 2 * power["before_onset"][1]
