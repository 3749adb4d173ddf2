"""What the forest plot and the task × algorithm matrix draw, and the power hint beside each verdict (issue 56)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from captrack.analysis.power import mde_binary
from captrack.report.pictures import (
    _forest_rows,
    _marked,
    task_algorithm_marks,
    task_algorithm_matrix,
)
from captrack.report.power_hint import (
    capability_hints,
    ci_detects,
    hint_text,
    items_needed,
    task_hints,
)

CAPS = ["CAN (mean)", "C1 Parametric knowledge & skills", "C2 Reasoning", "WILL (mean)", "W1 Willingness to answer"]


def _grid(variants: int) -> tuple[pd.DataFrame, ...]:
    names = [f"v{i}" for i in range(variants)]
    value = pd.DataFrame(np.arange(len(CAPS) * variants, dtype=float).reshape(len(CAPS), variants), index=CAPS, columns=names)
    value.iloc[2, 0] = math.nan  # C2 not measured for v0
    verdict = pd.DataFrame("equivalent", index=CAPS, columns=names)
    return value, value - 1.0, value + 1.0, verdict


def test_the_forest_has_a_row_per_measured_capability_and_variant_under_its_heading() -> None:
    rows, headings = _forest_rows(*_grid(3))
    assert list(headings) == ["C1 Parametric knowledge & skills", "C2 Reasoning", "W1 Willingness to answer"]  # no group means
    assert len(rows) == 3 * 3 - 1  # C2 of v0 has no change: no row
    c2 = rows[rows["capability"] == "C2 Reasoning"]
    assert list(c2["variant"]) == ["v1", "v2"] and set(c2["y"]) == {headings["C2 Reasoning"] + 1, headings["C2 Reasoning"] + 2}
    assert (rows["low"] < rows["value"]).all() and (rows["value"] < rows["high"]).all()


def test_a_forest_of_hundreds_of_variants_shows_the_group_means() -> None:
    rows, headings = _forest_rows(*_grid(200))
    assert list(headings) == ["CAN (mean)", "WILL (mean)"] and len(rows) == 400


def test_the_matrix_is_the_mean_change_of_each_algorithms_variants_per_task() -> None:
    per_task = pd.DataFrame({"variant": ["a1", "a2", "b1", "a1"], "task": ["t", "t", "t", "count"],
                             "metric": ["acc", "acc", "acc", "n"], "oriented_change": [-4.0, -2.0, 6.0, 12.0],
                             "change_unit": ["points", "points", "points", "% of base"]})
    checkpoints = pd.DataFrame({"variant": ["a1", "a2", "b1"], "algorithm": ["SFT", "SFT", "DPO"]})
    matrix = task_algorithm_matrix(per_task, checkpoints)
    assert list(matrix.columns) == ["DPO", "SFT"]
    assert matrix.at["t / acc", "SFT"] == -3.0 and matrix.at["t / acc", "DPO"] == 6.0
    assert matrix.at["count / n (% of base)", "SFT"] == 12.0 and math.isnan(matrix.at["count / n (% of base)", "DPO"])
    assert task_algorithm_matrix(per_task.assign(oriented_change=math.nan), checkpoints).empty  # no verdicts: none
    marks = task_algorithm_marks(per_task.assign(verdict=["regressed", "inconclusive", "improved", "regressed"]), checkpoints,
                                 matrix)
    assert marks.at["t / acc", "SFT"] == "" and marks.at["t / acc", "DPO"] == "▲"  # SFT's two variants disagree: no mark
    assert marks.at["count / n (% of base)", "SFT"] == "▼"
    assert _marked(0.02, "▲") == "+0.02 ▲" and _marked(0.02, "≈") == "0.0 ≈"  # never 0.0 beside a CI that excludes 0


def test_the_power_hint_says_what_the_items_detect_and_how_many_would_detect_the_margin() -> None:
    mde = 100 * mde_binary(400, 0.495)  # the demo's logic task: 9.9 points
    assert hint_text(400, mde, 5.0) == f"these 400 items detect ≥ {mde:.1f} points; ~{items_needed(400, mde, 5.0):,} would detect 5"
    assert items_needed(400, mde, 5.0) == math.ceil(400 * (mde / 5.0) ** 2)
    # the 1/√n law the plan rests on holds for the verdict's own MDE within a few percent at the planned n
    planned = items_needed(400, mde, 5.0)
    assert 100 * mde_binary(planned, 0.495) == pytest.approx(5.0, rel=0.05)
    assert hint_text(2000, 4.2, 5.0) == "these 2,000 items detect ≥ 4.2 points, within the ±5 margin"
    assert hint_text(12, 30.0, 10.0, "% of base") == "these 12 items detect ≥ 30.0% of base; ~108 would detect 10"
    assert hint_text(math.nan, 3.0, 5.0) == "n/a"
    assert hint_text(8, math.nan, 5.0, planned=1472.0) == "these 8 items detect no change with 80% power; ~1,472 would detect 5"


def test_task_and_capability_hints_read_the_verdicts_unit() -> None:
    per_task = pd.DataFrame({"variant": ["v", "v", "v"], "capability": ["C1", "C1", "C9"], "n": [400, 100, 50],
                             "kind": ["binary", "binary", "score"], "sd_diff": [0.7, 0.5, 3.0],
                             "mde_abs": [0.099, 0.075, 1.0], "mde_pct": [20.0, 7.5, 40.0],
                             "change_unit": ["points", "points", "% of base"], "oriented_change": [1.0, 2.0, 3.0]})
    hints = task_hints(per_task, 5.0)
    assert hints[0].startswith("these 400 items detect ≥ 9.9 points") and hints[2].startswith("these 50 items detect ≥ 40.0% of base")
    caps = pd.DataFrame({"variant": ["v", "v"], "key": ["C1", "C9"], "items": [500, 50], "change_unit": ["points", "% of base"]})
    combined = math.sqrt(9.9**2 + 7.5**2) / 2  # the MDE of the mean of the two members' changes
    assert capability_hints(caps, per_task, 5.0)[0].startswith(f"these 500 items detect ≥ {combined:.1f} points")
    assert ci_detects((-1.96, 1.96)) == pytest.approx(1.96 + 0.8416, rel=1e-4)  # a standard error of 1
