"""The board says what its per-algorithm rows cover: no interval below 3 variants, and an algorithm with one checkpoint
is a checkpoint (captrack.report.algorithm_notes, in findings and under the table of algorithms)."""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.algorithm_notes import INTERVAL_NOTE, algorithm_notes, one_checkpoint_sentence
from captrack.report.findings import findings
from captrack.report.target_notes import target_capability_sentences


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
