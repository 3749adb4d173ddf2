"""Drift over training: a variant ingested at three steps gives curves.csv equal to a computation from the
samples files alone, a one-step trajectory is today's end-point comparison, and bad step input is refused."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.bootstrap import resample_counts
from captrack.analysis.curve_windows import MemberSteps, scan_windows
from captrack.cli import main
from captrack.report.over_training import curve_figures

FACTS, SKILLS = "captrack_probe_c1_facts", "captrack_probe_c1_skills"
STEPS = (10, 20, 30)
N = 60


def _tasks(shift: int) -> list[FakeTask]:
    """Facts decay with the shift (more items wrong), skills wobble (items flip back and forth)."""
    facts = [0.0 if i < 6 * shift or i % 5 == 4 else 1.0 for i in range(N)]
    skills = [1.0 if (i + shift) % 3 else 0.0 for i in range(N)]
    return [FakeTask(FACTS, {"acc": facts}), FakeTask(SKILLS, {"exact_match": skills}, output_type="generate_until")]


def _cli(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    return status, " ".join(buffer.getvalue().split())


@pytest.fixture
def trajectory(tmp_path: Path) -> Path:
    """A store with the base and 'sft' at steps 10, 20, 30 (the run folders under tmp_path)."""
    store = tmp_path / "s.duckdb"
    write_run(tmp_path / "base", "base", _tasks(0))
    assert _cli("ingest", str(tmp_path / "base"), "--store", str(store), "--name", "base")[0] == 0
    for shift, step in enumerate(STEPS, start=1):
        write_run(tmp_path / f"sft{step}", f"sft-{step}", _tasks(shift))
        status, text = _cli("ingest", str(tmp_path / f"sft{step}"), "--store", str(store), "--name", "sft",
                            "--algorithm", "SFT", "--step", str(step))
        assert status == 0, text
    return store


def _values(folder: Path, task: str, metric: str) -> pd.Series:
    """doc_hash -> value, read straight from the samples file (no captrack code)."""
    [path] = folder.rglob(f"samples_{task}_*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return pd.Series({r["doc_hash"]: float(r[metric]) for r in rows}).sort_index()


def _expected(root: Path, seed: int = 0, n_resamples: int = 200) -> pd.DataFrame:
    """curves.csv's task rows computed from the samples files: means, drift, F, BT, F_adj/BT_adj, and the CI of
    a 0/1 metric's relative drift: the adjusted log-ratio interval, (B + 1)/(A + 1) with
    var(log) = (n10 + n01 + 2)/((A + 1)(B + 1))."""
    rows = []
    for step in STEPS:
        for task, metric, k in ((FACTS, "acc", 4), (SKILLS, "exact_match", None)):
            base, post = _values(root / "base", task, metric), _values(root / f"sft{step}", task, metric)
            pre_acc, post_acc = base.mean(), post.mean()
            f = float(((base == 1) & (post == 0)).mean())
            bt = float(((base == 0) & (post == 1)).mean())
            chance = (1 - pre_acc) * (1 - post_acc) / (k - 1) if k else 0.0
            right_before, right_after, flipped = base.sum(), post.sum(), float((base != post).sum())
            log_ratio = np.log((right_after + 1) / (right_before + 1))
            half = 1.959963984540054 * np.sqrt((flipped + 2) / ((right_before + 1) * (right_after + 1)))
            low, high = 100 * np.expm1(log_ratio - half), 100 * np.expm1(log_ratio + half)
            rows.append({"step": step, "key": task, "metric": metric, "n_items": len(base), "base_value": pre_acc,
                         "value": post_acc, "drift_pct": 100 * (post_acc - pre_acc) / pre_acc, "ci_low": low,
                         "ci_high": high, "forgetting": f, "backward_transfer": bt,
                         "forgetting_adj": max(f - chance, 0), "backward_transfer_adj": max(bt - chance, 0)})
    return pd.DataFrame(rows)


def test_curves_equal_a_computation_from_the_samples_files(trajectory: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    status, text = _cli("compare", "--store", str(trajectory), "--base", "base", "--variant", "sft:SFT",
                        "--out", str(out), "--bootstrap", "200")
    assert status == 0, text
    curves = pd.read_csv(out / "curves.csv")
    tasks = curves[curves["level"] == "task"].reset_index(drop=True)
    expected = _expected(tmp_path)
    assert list(tasks["step"]) == list(expected["step"]) and list(tasks["key"]) == list(expected["key"])
    assert set(tasks["variant"]) == {"sft"} and set(tasks["algorithm"]) == {"SFT"}
    for column in expected.columns.drop(["step", "key", "metric"]):
        assert np.allclose(tasks[column], expected[column], rtol=1e-9, atol=1e-9), column
    # A capability is the plain mean of its members (C1 holds both tasks here), its CI from the same resamples.
    caps = curves[(curves["level"] == "capability") & (curves["key"] == "C1")].set_index("step")
    means = expected.groupby("step")[["drift_pct", "forgetting", "forgetting_adj", "backward_transfer_adj"]].mean()
    for column in means.columns:
        assert np.allclose(caps[column], means[column]), column
    counts = {t: resample_counts(t, N, 200, 0).astype(float) for t in (FACTS, SKILLS)}
    for step in STEPS:
        per_task = [100 * (counts[t] @ (_values(tmp_path / f"sft{step}", t, m) - _values(tmp_path / "base", t, m)).to_numpy())
                    / (counts[t] @ _values(tmp_path / "base", t, m).to_numpy()) for t, m in ((FACTS, "acc"), (SKILLS, "exact_match"))]
        low, high = np.percentile(np.mean(per_task, axis=0), [2.5, 97.5])
        assert np.isclose(caps.loc[step, "ci_low"], low) and np.isclose(caps.loc[step, "ci_high"], high)
    _check_summary(pd.read_csv(out / "curve_summary.csv"), caps, tmp_path, pd.read_csv(out / "curve_items.csv"))
    _check_step_flips(pd.read_csv(out / "step_flips.csv"), tmp_path)
    assert json.loads((out / "summary.json").read_text())["trajectories"] == {"sft": list(STEPS)}
    # On a board, each point of the drift figure links to that step's flipped items.
    svg = (curve_figures(curves, tmp_path / "fig", steps_href="../steps.html")[1]).read_text()
    assert sorted(re.findall(r'<a xlink:href="\.\./steps\.html#([^"]+)" target="_top">', svg)) == sorted(
        f"flips-sft-{s}-{k}" for s in STEPS for k in set(curves.loc[curves["level"] == "capability", "key"]))
    # The last step is the end point: drift.csv and transitions.csv hold the same numbers.
    drift = pd.read_csv(out / "drift.csv").set_index("task")
    last = tasks[tasks["step"] == STEPS[-1]].set_index("key")
    assert np.allclose(drift.loc[last.index, "rel_drift_pct"], last["drift_pct"])
    assert np.allclose(drift.loc[last.index, "ci_low"], last["ci_low"])
    for column in ("oriented_change", "change_ci_low", "change_ci_high"):  # the end point's verdict, step by step
        assert np.allclose(drift.loc[last.index, column], last[column]), column
    assert list(drift.loc[last.index, "verdict"]) == list(last["verdict"])


def _check_summary(summary: pd.DataFrame, caps: pd.DataFrame, root: Path, items: pd.DataFrame) -> None:
    row = summary.set_index("capability").loc["C1"]
    beyond = [s for s in STEPS if caps.loc[s, "change_ci_high"] < 0 or caps.loc[s, "change_ci_low"] > 0]
    assert beyond, "the fixture's facts decay should leave noise"
    assert all((caps.loc[s, "verdict"] in ("regressed", "improved")) == (s in beyond) for s in STEPS)
    # first_step_significant: the window scan over the K steps (issue 53), recomputed from the samples files: each
    # member's items x steps changes (points), each item its own unit, and the steps' own verdicts and p-values
    members = []
    for task, metric in ((FACTS, "acc"), (SKILLS, "exact_match")):
        base = _values(root / "base", task, metric)
        changes = np.column_stack([100.0 * (_values(root / f"sft{s}", task, metric) - base).to_numpy() for s in STEPS])
        members.append(MemberSteps(changes, [f"{task}/{h}" for h in base.index]))
    scan = scan_windows(list(STEPS), members, list(caps["verdict"]), list(caps["p_value"]))
    assert row["first_step_significant"] == scan.first_step
    assert not pd.isna(row["first_step_significant"])
    assert np.isclose(row["trend_pct_per_step"], np.polyfit(STEPS, caps["drift_pct"].to_numpy(), 1)[0])
    assert row["trend_ci_low"] <= row["trend_pct_per_step"] <= row["trend_ci_high"]
    # Churn from the files: right in the base, wrong at a step, right again later (and the reverse).
    regained, lost = set(), set()
    for task, metric in ((FACTS, "acc"), (SKILLS, "exact_match")):
        base = _values(root / "base", task, metric)
        seq = pd.concat([_values(root / f"sft{s}", task, metric) for s in STEPS], axis=1).to_numpy()
        for doc, b, values in zip(base.index, base, seq, strict=True):
            for i in range(len(STEPS)):
                for j in range(i + 1, len(STEPS)):
                    if b == 1 and values[i] == 0 and values[j] == 1:
                        regained.add((task, doc))
                    if b == 0 and values[i] == 1 and values[j] == 0:
                        lost.add((task, doc))
    assert regained and lost
    assert row["forgotten_regained"] == len(regained) and row["gained_lost"] == len(lost)
    listed = {p: set(zip(f["task"], f["doc_hash"], strict=True)) for p, f in items.groupby("pattern")}
    assert listed == {"forgotten_regained": regained, "gained_lost": lost}


def _check_step_flips(flips: pd.DataFrame, root: Path) -> None:
    """Every item whose value changed at a step against the step before it (the base before the first)."""
    expected = set()
    for task, metric in ((FACTS, "acc"), (SKILLS, "exact_match")):
        before, since = _values(root / "base", task, metric), "base"
        for step in STEPS:
            now = _values(root / f"sft{step}", task, metric)
            for doc in now.index[now != before]:
                expected.add((step, since, task, doc, "forgotten" if before[doc] == 1 else "gained"))
            before, since = now, str(step)
    got = set(zip(flips["step"], flips["since"].astype(str), flips["task"], flips["doc_hash"], flips["change"], strict=True))
    assert expected and got == expected
    assert set(flips["capability"]) == {"C1"} and set(flips["variant"]) == {"sft"}


def test_a_one_step_trajectory_is_the_end_point_comparison(tmp_path: Path) -> None:
    write_run(tmp_path / "base", "base", _tasks(0))
    write_run(tmp_path / "sft", "sft", _tasks(2))
    outs = {}
    for name, step in (("plain", []), ("step", ["--step", "40"])):
        store = tmp_path / f"{name}.duckdb"
        for model in ("base", "sft"):
            extra = step if model == "sft" else []
            assert _cli("ingest", str(tmp_path / model), "--store", str(store), "--name", model, *extra)[0] == 0
        outs[name] = tmp_path / f"out-{name}"
        assert _cli("compare", "--store", str(store), "--base", "base", "--variant", "sft:SFT", "--out", str(outs[name]))[0] == 0
    plain = sorted(p.name for p in outs["plain"].glob("*.csv"))
    assert sorted(p.name for p in outs["step"].glob("*.csv")) == sorted([*plain, "curves.csv", "curve_summary.csv", "curve_items.csv",
                                                                           "step_flips.csv"])
    for name in plain:
        assert (outs["plain"] / name).read_bytes() == (outs["step"] / name).read_bytes(), name
    assert "trajectories" not in json.loads((outs["plain"] / "summary.json").read_text())


def _rows(store: Path) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT run_id, model, step FROM runs ORDER BY ALL").fetchall()


def test_a_step_given_twice_is_refused_naming_it(trajectory: Path, tmp_path: Path) -> None:
    before = _rows(trajectory)
    write_run(tmp_path / "again", "sft-again", _tasks(5))
    status, text = _cli("ingest", str(tmp_path / "again"), "--store", str(trajectory), "--name", "sft", "--step", "20")
    assert status == 1 and "step 20 is given twice for model 'sft'" in text and "nothing was ingested" in text
    assert _rows(trajectory) == before
    status, text = _cli("ingest", str(tmp_path / "again"), "--store", str(trajectory), "--name", "sft")
    assert status == 1 and "without a step" in text and _rows(trajectory) == before


def test_steps_on_the_base_are_refused_naming_it(tmp_path: Path) -> None:
    store, out = tmp_path / "s.duckdb", tmp_path / "out"
    for model, step in (("base", "0"), ("sft", "10")):
        write_run(tmp_path / model, model, _tasks(int(step) // 10))
        assert _cli("ingest", str(tmp_path / model), "--store", str(store), "--name", model, "--step", step)[0] == 0
    status, text = _cli("compare", "--store", str(store), "--base", "base", "--variant", "sft", "--out", str(out))
    assert status == 1 and "base 'base' carries training steps (0)" in text and not out.exists()


def test_the_step_comes_from_the_checkpoints_trainer_state(tmp_path: Path) -> None:
    checkpoint = tmp_path / "train" / "checkpoint-7"
    checkpoint.mkdir(parents=True)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 7, "epoch": 0.5}))
    write_run(tmp_path / "run", str(checkpoint), _tasks(1))
    store = tmp_path / "s.duckdb"
    assert _cli("ingest", str(tmp_path / "run"), "--store", str(store), "--name", "sft")[0] == 0
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT step, epoch FROM runs").fetchall() == [(7, 0.5)]

