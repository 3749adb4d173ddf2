"""What a board makes in a child process (figures, task pages) is the same bytes as made in the caller, and a failure
there is raised in the caller."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from captrack.report import background, figures
from captrack.report.background import in_background
from captrack.report.slugs import task_page_name


def _calls(out: Path) -> list[background.Call]:
    rng = np.random.default_rng(3)
    value = pd.DataFrame(rng.normal(0, 4, (3, 5)), index=["C1 a", "C2 b", "W1 c"], columns=[f"v{i}" for i in range(5)])
    verdicts = pd.DataFrame(np.where(value < -3, "regressed", "equivalent"), index=value.index, columns=value.columns)
    return [(figures.heatmap_figure, (value, value.abs() > 3, out), {"verdicts": verdicts, "unit": "points"}),
            (task_page_name, ("captrack_mmlu_pro/math",), {})]


def test_a_child_draws_the_same_bytes_as_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    drawing = in_background(_calls(tmp_path / "child"))
    assert drawing._process is not None  # drawn by a child process
    child = drawing.results()
    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    here = in_background(_calls(tmp_path / "here"))
    assert here._process is None
    local = here.results()
    assert [p.name for p in child[0]] == [p.name for p in local[0]] == ["heatmap.png", "heatmap.svg"]
    for a, b in zip(child[0], local[0], strict=True):
        assert a.read_bytes() == b.read_bytes()
    assert child[1] == local[1]  # what a call returns comes back


def test_a_failure_in_the_child_is_raised_in_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    drawing = in_background([(int, ("not a number",), {})])
    with pytest.raises(ValueError, match="not a number"):
        drawing.results()
    drawing.close()


def test_a_warmed_up_child_returns_what_each_sent_call_returned_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    made = background.Background(warm_up=[(figures.warm_up, (), {})])  # started before the calls are known
    made.run([(task_page_name, ("captrack_mmlu_pro/math",), {})])
    made.run([(int, ("7",), {}), (len, ("abc",), {})])
    assert made._process is not None
    assert made.results() == [task_page_name("captrack_mmlu_pro/math"), 7, 3]  # the warm-up's result left out


def test_a_failure_is_raised_even_when_more_calls_were_sent_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    made = background.Background()
    made.run([(int, ("not a number",), {})])
    made.run([(len, ("abc",), {})])
    with pytest.raises(ValueError, match="not a number"):
        made.results()
    made.close()


def test_one_core_runs_the_calls_here_and_skips_the_warm_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    made = background.Background(warm_up=[(int, ("a warm-up is not run here",), {})])
    made.run([(len, ("abc",), {})])
    assert made._process is None
    assert made.results() == [3]


def test_a_child_that_ends_without_sending_results_back_is_an_error_that_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from captrack.errors import CaptrackError

    monkeypatch.setattr(background, "usable_cores", lambda: 2)
    monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    real = background.spawn
    monkeypatch.setattr(background, "spawn", lambda argv, **kw: real([sys.executable, "-c", "import sys; sys.stdin.read()"], **kw))
    made = background.Background()
    made.run([(len, ("abc",), {})])
    with pytest.raises(CaptrackError, match="exit 0"):
        made.results()
