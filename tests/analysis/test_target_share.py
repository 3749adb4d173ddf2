"""A capability that holds the post-training's target is also shown without it (captrack.analysis.target_share)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from captrack.analysis.target_share import TARGET_COLUMNS, without_target


def _drift(rows: list[tuple[str, str, str, float, float, float, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"variant": v, "task": t, "metric": "acc", "capability": c, "oriented_change": d,
                          "change_ci_low": lo, "change_ci_high": hi, "verdict": verdict}
                         for v, t, c, d, lo, hi, verdict in rows])


CAPS = pd.DataFrame([{"variant": v, "level": "capability", "key": "C2", "oriented_change": d, "change_ci_low": d - 2,
                      "change_ci_high": d + 2, "verdict": "improved"} for v, d in (("sft", 3.0), ("rl", 1.0))])


def test_the_target_is_taken_out_of_its_capability() -> None:
    drift = _drift([("sft", "target", "C2", 8.0, 3.0, 13.0, "improved"), ("sft", "logic", "C2", -1.0, -4.0, 2.0, "equivalent"),
                    ("sft", "other", "C1", 5.0, 1.0, 9.0, "improved"),
                    ("rl", "target", "C2", 1.0, -1.0, 3.0, "equivalent"), ("rl", "logic", "C2", 2.0, 0.0, 4.0, "equivalent"),
                    ("rl", "math", "C2", 0.0, -3.0, 3.0, "equivalent")])
    rows = without_target(CAPS, drift, "target").set_index("variant")
    assert list(rows.reset_index().columns) == TARGET_COLUMNS and set(rows.index) == {"sft", "rl"}
    sft, rl = rows.loc["sft"], rows.loc["rl"]
    assert (sft["oriented_change"], sft["without_change"], sft["without_ci_low"], sft["without_ci_high"]) == (3.0, -1.0, -4.0, 2.0)
    assert sft["others"] == "logic/acc" and sft["without_verdict"] == "equivalent"  # one member left: its own verdict
    # two left: their mean, with the mean of their half-widths (as if they moved together), and no verdict
    assert rl["without_change"] == pytest.approx(1.0) and rl["others"] == "logic/acc; math/acc"
    assert (rl["without_ci_low"], rl["without_ci_high"]) == pytest.approx((-1.5, 3.5)) and rl["without_verdict"] == ""


def test_no_target_or_a_capability_of_the_target_alone() -> None:
    drift = _drift([("sft", "target", "C2", 8.0, 3.0, 13.0, "improved")])
    assert without_target(CAPS, drift, "").empty and without_target(CAPS, drift, "elsewhere").empty
    alone = without_target(CAPS, drift, "target").iloc[0]
    assert math.isnan(alone["without_change"]) and alone["others"] == ""
