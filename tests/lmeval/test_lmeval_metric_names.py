"""lm-eval's own binary metrics that captrack does not declare (`em`, `bleu_acc`, `prompt_level_strict_acc`) go
through compare and the leaderboard alike, taken as higher-is-better (issue 40: the leaderboard failed on them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.metrics.registry import lower_is_better

BASE = [1, 1, 0, 1, 0, 1, 1, 0]
VARIANT = [0, 1, 0, 1, 1, 0, 1, 0]


def test_undeclared_metrics_are_higher_is_better_and_declared_ones_keep_their_direction() -> None:
    assert not lower_is_better("em") and not lower_is_better("prompt_level_strict_acc") and not lower_is_better("acc")


@pytest.mark.parametrize("metric", ["em", "bleu_acc", "prompt_level_strict_acc"])
def test_the_leaderboard_builds_on_lm_evals_binary_metrics(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: str) -> None:
    store = tmp_path / "s.duckdb"
    for name, values in (("base", BASE), ("var", VARIANT)):
        write_run(tmp_path / name, name, [FakeTask("triviaqa", {metric: values}, output_type="generate_until")])
        assert main(["ingest", str(tmp_path / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: T\nstore: {store}\nbootstrap: 20\n"
                                            "comparisons:\n  - base: base\n    variants:\n      - {name: var, algorithm: SFT}\n")
    assert main(["leaderboard", str(board)]) == 0, capsys.readouterr().err
    assert metric in (board / "tasks" / "triviaqa.html").read_text()
