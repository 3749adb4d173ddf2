"""`captrack run --quick` is a smoke test, and its board says so: its own title and description, no claim beyond verdicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from captrack.pipeline.board import board_spec
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.quick_run import demo_experiment, quick


def test_the_quick_board_says_it_is_a_smoke_test_and_claims_nothing(tmp_path: Path) -> None:
    demo = load_experiment(demo_experiment())
    experiment = dataclasses.replace(quick(demo), workdir=tmp_path / "work", leaderboard=tmp_path / "board")
    experiment.work.store.parent.mkdir(parents=True)
    experiment.work.store.touch()  # the board definition names a store that exists
    spec = board_spec(experiment)
    assert spec.smoke and not board_spec(dataclasses.replace(experiment, smoke=False, title=demo.title)).smoke
    assert "smoke test" in spec.title.lower() and "smoke test" in spec.description.lower()
    assert demo.title not in spec.title and demo.description not in spec.description
    assert "3 items" in spec.description and "no claim" in spec.description
    assert "RL" not in spec.title + spec.description  # the full demo's story of its algorithms is not retold
