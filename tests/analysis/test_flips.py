"""Flip decomposition: harmful (1→0) and beneficial (0→1) flips, answer churn, and all-seeds-agree counts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.metrics import score
from captrack.probes import generate

TASK = "captrack_probe_c2_word_problems"
DOCS = generate("word_problems", 1234, 8)
GOLD = [int(float(d["answer"])) for d in DOCS]


def _task(responses: dict[int, str]) -> FakeTask:
    values = [score("short_answer", doc, responses[i])["exact_match"] for i, doc in enumerate(DOCS)]
    return FakeTask(TASK, {"exact_match": values}, output_type="generate_until", docs=dict(enumerate(DOCS)),
                    targets=dict.fromkeys(range(len(DOCS)), ""), responses=responses)


BASE = {i: f"Answer: {GOLD[i] + 1}" if i < 4 else f"Answer: {GOLD[i]}" for i in range(8)}


def test_churn_counts_answers_that_moved_while_the_score_stayed(tmp_path: Path) -> None:
    variant = dict(BASE)
    variant[0], variant[1] = f"Answer: {GOLD[0] + 2}", f"It is {GOLD[1] + 3}."  # wrong → another wrong: churn
    variant[4] = f"The answer is {GOLD[4]}."  # right → right, the same number read: no churn
    variant[5] = f"Answer: {GOLD[5] + 9}"  # right → wrong: a harmful flip, not churn
    variant[2] = f"Answer: {GOLD[2]}"  # wrong → right: a beneficial flip
    write_run(tmp_path / "base", "base", [_task(BASE)])
    write_run(tmp_path / "v", "v", [_task(variant)])
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    row = pd.read_csv(tmp_path / "out" / "transitions.csv").iloc[0]
    assert (row["n_10"], row["n_01"], row["answer_churn"]) == (1, 1, 2)
    assert (row["n_replicates"], row["n_10_all_seeds"], row["n_01_all_seeds"]) == (1, 1, 1)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "harmful 1→0 / beneficial 0→1 / churn" in report and "| 1 / 1 / 2 |" in report


def test_several_seeds_report_the_pooled_and_the_all_seeds_agree_counts(tmp_path: Path) -> None:
    # seed 0 forgets item 5; seed 1 forgets items 5 and 6: pooled 3 forgotten, every seed agrees on 1
    for seed, lost in ((0, (5,)), (1, (5, 6))):
        variant = dict(BASE) | {i: f"Answer: {GOLD[i] + 9}" for i in lost}
        stamp = f"2026-01-01T00-00-0{seed}.000000"
        write_run(tmp_path / "base_runs" / f"s{seed}", "base", [_task(BASE)], seed=seed, date_id=stamp)
        write_run(tmp_path / "var_runs" / f"s{seed}", "v", [_task(variant)], seed=seed, date_id=stamp)
    assert main(["compare", "--base", str(tmp_path / "base_runs"), "--variant", f"v={tmp_path / 'var_runs'}",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    row = pd.read_csv(tmp_path / "out" / "transitions.csv").iloc[0]
    assert (row["n"], row["n_10"], row["n_replicates"], row["n_10_all_seeds"], row["n_01_all_seeds"]) == (16, 3, 2, 1, 0)
    assert "3 / 0 / 0 (all 2 seeds: 1 / 0)" in (tmp_path / "out" / "report.md").read_text()


def test_two_base_seeds_give_the_noise_floor_beside_f_and_bt(tmp_path: Path) -> None:
    """The base's seed 1 gets items 0 and 6 otherwise than its seed 0 (item 0 right, item 6 wrong): between its
    own two runs 1 of 8 items goes 1→0 each way, so F and BT of a variant are read against a floor of 1/8."""
    base_seed1 = dict(BASE) | {0: f"Answer: {GOLD[0]}", 6: f"Answer: {GOLD[6] + 9}"}
    for seed, base in ((0, BASE), (1, base_seed1)):
        stamp = f"2026-01-01T00-00-0{seed}.000000"
        write_run(tmp_path / "base_runs" / f"s{seed}", "base", [_task(base)], seed=seed, date_id=stamp)
        write_run(tmp_path / "var_runs" / f"s{seed}", "v", [_task(BASE)], seed=seed, date_id=stamp)
    assert main(["compare", "--base", str(tmp_path / "base_runs"), "--variant", f"v={tmp_path / 'var_runs'}",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0"]) == 0
    row = pd.read_csv(tmp_path / "out" / "transitions.csv").iloc[0]
    assert (row["floor_forgetting"], row["floor_backward_transfer"]) == (1 / 8, 1 / 8)
    one_seed = tmp_path / "one"
    write_run(one_seed / "base", "base", [_task(BASE)])
    write_run(one_seed / "v", "v", [_task(BASE)])
    assert main(["compare", "--base", str(one_seed / "base"), "--variant", f"v={one_seed / 'v'}",
                 "--out", str(one_seed / "out"), "--bootstrap", "0"]) == 0
    assert pd.isna(pd.read_csv(one_seed / "out" / "transitions.csv").iloc[0]["floor_forgetting"])  # no floor from one run
