"""The board says what its per-algorithm rows cover: no interval below 3 variants, and an algorithm with one checkpoint
is a checkpoint (captrack.report.algorithm_notes, in findings and under the table of algorithms)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.report.algorithm_notes import INTERVAL_NOTE, algorithm_notes, one_checkpoint_sentence
from captrack.report.findings import findings
from captrack.report.target_notes import target_capability_sentences

FACTS = "captrack_probe_c1_facts"


def _caps(rows: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"level": "capability", "variant": v, "algorithm": a, "key": "C1", "mean_rel_drift_pct": -3.0,
                          "oriented_change": -2.0, "change_ci_low": -4.0, "change_ci_high": 0.5, "verdict": "inconclusive"}
                         for v, a in rows])


def test_findings_say_one_checkpoint_compares_checkpoints_not_algorithms() -> None:
    said = findings(_caps([("sft", "SFT"), ("dpo", "DPO"), ("rl1", "RL"), ("rl2", "RL")]), pd.DataFrame())
    caveat = [s for s in said if "compares checkpoints, not algorithms" in s]
    assert caveat == [one_checkpoint_sentence(["DPO", "SFT"])]
    assert caveat[0].startswith("DPO and SFT have one checkpoint each:") and "RL" not in caveat[0]
    replicated = findings(_caps([("a1", "SFT"), ("a2", "SFT"), ("b1", "DPO"), ("b2", "DPO")]), pd.DataFrame())
    assert not any("compares checkpoints" in s for s in replicated)
    alone = findings(_caps([("sft", "SFT")]), pd.DataFrame())  # one algorithm: no algorithm-level statement at all
    assert not any("compares checkpoints" in s for s in alone)


def test_the_table_of_algorithms_says_what_its_interval_covers() -> None:
    summary = pd.DataFrame({"algorithm": ["SFT", "DPO", "<b>RL</b>"], "key": ["C1"] * 3, "n_variants": [3, 1, 1],
                            "ci_low": [-5.0, math.nan, math.nan], "ci_high": [1.0, math.nan, math.nan]})
    notes = algorithm_notes(summary)
    assert notes[0] == INTERVAL_NOTE and "3 or more of its variants" in INTERVAL_NOTE
    assert notes[1].startswith("<b>RL</b> and DPO have one checkpoint each")  # plain text: each page escapes it
    assert algorithm_notes(summary.iloc[:1]) == [INTERVAL_NOTE]
    assert algorithm_notes(summary, aggregate_only=True) == notes[1:]  # aggregate scores: no interval to explain
    assert algorithm_notes(summary.iloc[:0]) == []


def test_the_target_is_marked_in_its_capability() -> None:
    rows = pd.DataFrame([{"variant": "sft", "key": "C2", "target": "word_problems", "oriented_change": 3.6, "change_ci_low": 0.6,
                          "change_ci_high": 6.7, "verdict": "improved", "others": "logic/acc", "without_change": -0.75,
                          "without_ci_low": -4.1, "without_ci_high": 2.6, "without_verdict": "equivalent"},
                         {"variant": "rl", "key": "C2", "target": "word_problems", "oriented_change": 1.0, "change_ci_low": -1.0,
                          "change_ci_high": 3.0, "verdict": "equivalent", "others": "", "without_change": math.nan,
                          "without_ci_low": math.nan, "without_ci_high": math.nan, "without_verdict": ""}])
    sft, rl = target_capability_sentences(rows, {})
    assert sft == ("C2 holds the target word_problems: for sft, C2 +3.6 points [+0.6, +6.7] → improved at ±5; without the "
                   "target (logic/acc): -0.8 points [-4.1, +2.6] → equivalent at ±5.")
    assert rl.endswith("without the target it has no other scored member, so all of its change is the target's.")


def test_a_board_draws_the_interval_of_three_variants_from_their_joint_resamples(tmp_path: Path) -> None:
    """Through `captrack leaderboard`: the comparison keeps each capability's drift resamples, and the board's
    algorithms.csv draws SFT's interval (3 variants, sharing the base) but none for RL's single checkpoint."""
    runs, store = tmp_path / "runs", tmp_path / "store.duckdb"
    base = [1, 1, 0, 1, 0, 1, 1, 0, 1, 1] * 4
    rng = np.random.default_rng(4)
    write_run(runs / "base", "base", [FakeTask(FACTS, {"acc": base})])
    for i, name in enumerate(("sft1", "sft2", "sft3", "rl1")):
        # the same susceptible items (every fourth) are lost by every variant: their drifts covary through the base
        flipped = [0 if (b and j % 4 == 0 and rng.random() < 0.7) else (1 - b if rng.random() < 0.05 else b)
                   for j, b in enumerate(base)]
        write_run(runs / name, name, [FakeTask(FACTS, {"acc": flipped})], date_id=f"2026-01-0{i + 2}T00-00-00.000000")
    for name in ("base", "sft1", "sft2", "sft3", "rl1"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    variants = "".join(f"      - {{name: {n}, algorithm: {'RL' if n == 'rl1' else 'SFT'}}}\n" for n in ("sft1", "sft2", "sft3", "rl1"))
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 200\ncomparisons:\n  - base: base\n"
                                            f"    variants:\n{variants}")
    build_leaderboard(board)
    rows = pd.read_csv(board / "algorithms.csv").set_index("algorithm")
    sft, rl = rows.loc["SFT"], rows.loc["RL"]
    assert sft["n_variants"] == 3 and sft["ci_low"] < sft["mean_rel_drift_pct"] < sft["ci_high"]
    assert sft["shared_se"] > 0 and str(sft["ci_note"]).startswith("t(2) on 3 variants")
    assert math.isnan(rl["ci_low"]) and "a checkpoint, not an algorithm" in str(rl["ci_note"])
    assert "RL has one checkpoint" in (board / "README.md").read_text()
