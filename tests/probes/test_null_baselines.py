"""The forced-choice and contrast probes' chance levels against their measured nulls (captrack/probes/null_baselines.yaml).

The committed file holds each task's accuracy under random-weight models of the demo's architecture
(tests/benchmarks/measure_probe_nulls.py, >= 5 seeds). A task whose stated chance (mean 1/k over its items) lies
outside its measured null's CI, or a forced-choice task (or a new version of one) without a measured row, fails.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from captrack.errors import InputError
from captrack.probes.null_baselines import (
    NULL_BASELINES,
    Interval,
    NullBaseline,
    chance_adjusted_metrics,
    choice_tasks,
    crossed_interval,
    null_problems,
    read_null_baselines,
)


def test_every_forced_choice_probe_holds_its_stated_chance() -> None:
    rows = read_null_baselines()
    assert null_problems(rows) == []
    for row in rows.values():
        print(f"{row.task} {row.metric}: null {row.null.mean:.3f} [{row.null.low:.3f}, {row.null.high:.3f}], "
              f"chance {row.chance}, {len(row.seeds)} seeds x {row.items} items")


def test_the_forced_choice_probes_are_found_with_their_chance_adjusted_metrics() -> None:
    found = {t.task: chance_adjusted_metrics(t) for t in choice_tasks()}
    assert found["captrack_probe_w1_choice"] == ("contrast_acc",)
    assert found["captrack_probe_c2_logic"] == ("acc",)
    assert found["captrack_probe_c5a_forms"] == ()  # form_accuracy/consistency: not chance-adjusted, no promise
    assert not any(t.startswith("captrack_probe_c1_skills") for t in found)  # generative: not a choice task


def test_a_task_without_a_measured_null_fails() -> None:
    rows = read_null_baselines()
    w1 = next(t for t in choice_tasks() if t.task == "captrack_probe_w1_choice")
    new = dataclasses.replace(w1, task="captrack_probe_w9_choice")
    assert null_problems(rows, [new]) == [
        "captrack_probe_w9_choice contrast_acc: no measured null in null_baselines.yaml; "
        "re-measure with python tests/benchmarks/measure_probe_nulls.py --write"]
    bumped = dataclasses.replace(w1, version=w1.version + 1)
    assert "null measured on version" in null_problems(rows, [bumped])[0]


def test_a_null_outside_its_chance_or_on_too_few_seeds_fails() -> None:
    rows = read_null_baselines()
    key = ("captrack_probe_w1_choice", "contrast_acc")
    w1 = [t for t in choice_tasks() if t.task == key[0]]
    off = dataclasses.replace(rows[key], null=Interval(0.633, 0.60, 0.66, 0.015, 300.0))
    assert null_problems({key: off}, w1) == [
        "captrack_probe_w1_choice contrast_acc: measured null 0.633 [0.600, 0.660] leaves its stated chance 0.500: "
        "fix the task's options or state the measured chance"]
    few: NullBaseline = dataclasses.replace(rows[key], seeds=(0, 1))
    assert null_problems({key: few}, w1)[0].endswith("seeds, < 5; re-measure with python "
                                                     "tests/benchmarks/measure_probe_nulls.py --write")


def _coverage(make_table: Callable[[np.random.Generator], np.ndarray], runs: int = 400) -> float:
    """Share of `runs` simulated seeds x items tables whose crossed interval holds the true null, 0.5."""
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(runs):
        ci = crossed_interval(make_table(rng))
        hits += ci.low <= 0.5 <= ci.high
    return hits / runs


def test_the_crossed_interval_covers_independent_outcomes() -> None:
    """5 seeds x 60 items, every outcome a fair coin: the interval is about the binomial one and covers."""
    assert _coverage(lambda rng: (rng.random((5, 60)) < 0.5).astype(float)) >= 0.93
    table = (np.random.default_rng(0).random((5, 400)) < 0.5).astype(float)
    assert crossed_interval(table).mean == pytest.approx(table.mean())


def test_the_crossed_interval_covers_when_each_seed_leans_its_own_way() -> None:
    """One random model answers its items alike (0.63 on one seed, 0.37 on another); over seeds the null is 0.5.

    A binomial interval over the 300 cells would miss about a third of the time; the crossed one counts the
    seeds' spread (Satterthwaite's df near the 5 seeds, not the 300 cells)."""
    def leaning(rng: np.random.Generator) -> np.ndarray:
        seeds = 0.5 + rng.normal(0, 0.1, size=(5, 1))
        return (rng.random((5, 60)) < seeds).astype(float)

    assert _coverage(leaning) >= 0.92
    ci = crossed_interval(leaning(np.random.default_rng(3)))
    assert ci.df < 30


def test_the_crossed_interval_covers_when_items_lean_alike_for_every_seed() -> None:
    """Items every random model tends to answer the same way (a surface preference all seeds share)."""
    def items(rng: np.random.Generator) -> np.ndarray:
        p = np.clip(0.5 + rng.normal(0, 0.3, size=(1, 60)), 0, 1)
        return (rng.random((5, 60)) < p).astype(float)

    assert _coverage(items) >= 0.92


def test_the_crossed_interval_widens_with_items_all_seeds_get_wrong() -> None:
    """Items every random model answers the same way (a surface preference shared by all seeds) count once each."""
    item_bias = np.repeat([1.0, 0.0], 20)  # 40 items, each decided alike by every seed
    table = np.tile(item_bias, (5, 1))
    ci = crossed_interval(table)
    assert ci.se == pytest.approx(np.sqrt(0.25 / 40), rel=0.05)  # 40 items, not 200 cells


def test_the_crossed_interval_refuses_what_it_cannot_compute() -> None:
    with pytest.raises(InputError, match="seeds x items table of >= 2 x 2"):
        crossed_interval(np.ones((1, 10)))
    with pytest.raises(InputError, match="with NaN"):
        crossed_interval(np.array([[1.0, np.nan], [0.0, 1.0]]))


def test_a_missing_or_malformed_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=re.escape("missing; run python tests/benchmarks/measure_probe_nulls.py --write")):
        read_null_baselines(tmp_path / "absent.yaml")
    broken = tmp_path / "null_baselines.yaml"
    broken.write_text("tasks:\n  - {task: captrack_probe_w1_choice, metric: contrast_acc}\n")
    with pytest.raises(InputError, match="tasks row 1 is malformed"):
        read_null_baselines(broken)
    assert NULL_BASELINES.name == "null_baselines.yaml"
