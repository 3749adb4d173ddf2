"""Hostile labels fed through compare, leaderboard and run: every file written is scanned.

Markdown is rendered with HTML enabled (as GitHub's preview of raw HTML or a static-site builder
would) and must hold no element or handler a label planted; every CSV cell, rankings.csv's included,
must be inert for a spreadsheet; a task name with a backtick must sit whole in one code span; the
console must print `[/]` in a name as typed.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run
from hostile import IMG, TICK, scan_folder, scan_markdown
from tinymodel import build_tiny_model

from captrack.cli import main

FACTS = "captrack_probe_c1_facts"
ODD_TASK = f"my_{TICK}"  # not in the taxonomy: report.md names it in a code span
NAMES = {"one": f"v{IMG}", "two": "w[/]|`b`"}
ALGORITHMS = {"one": "=cmd|'calc'!A0", "two": "@SUM(1)"}


def _store(tmp_path: Path) -> Path:
    store = tmp_path / "s.duckdb"
    tasks = {"base": [1, 1, 1, 0, 1, 1, 1, 1], "one": [0, 1, 0, 0, 1, 0, 1, 1], "two": [1, 1, 1, 1, 0, 0, 0, 1]}
    for key, values in tasks.items():
        write_run(tmp_path / key, key, [FakeTask(FACTS, {"acc": values}, doc_text={0: IMG}),
                                         FakeTask(ODD_TASK, {"acc": values[::-1]})])
        name = NAMES.get(key, "base")
        assert main(["ingest", str(tmp_path / key), "--store", str(store), "--name", name,
                     "--algorithm", ALGORITHMS.get(key, ""), "--family", "<script>alert(1)</script>"]) == 0
    return store


def test_code_spans_hold_any_backticks() -> None:
    from captrack.report.escape import md_code

    for text in ("a`b", "`a", "a``b`", "``"):
        assert TICK not in scan_markdown(Path("x.md"), f"see {md_code(text)} here")


def test_compare_and_leaderboard_files_carry_no_live_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "runs")
    assert "w[/]|`b`" in capsys.readouterr().err  # the console printed the name as typed
    out = tmp_path / "out"
    variants = [f"{NAMES[k]}:{ALGORITHMS[k]}" for k in NAMES]
    assert main(["compare", "--store", str(store), "--base", "base", *(a for v in variants for a in ("--variant", v)),
                 "--out", str(out), "--bootstrap", "50"]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: 'T {IMG}'\nstore: {store}\nbootstrap: 50\nby: [question]\ncomparisons:\n  - base: base\n    variants:\n"
        + "".join(f"      - {{name: '{NAMES[k]}', algorithm: \"{ALGORITHMS[k]}\", family: '@f[/]', size: '+1', "
                  f"data: '-{IMG}'}}\n" for k in NAMES))
    assert main(["leaderboard", str(board)]) == 0
    bad, scanned = scan_folder(out)
    more, scanned_board = scan_folder(board)
    names = {p.name for p in scanned + scanned_board}
    assert {"report.md", "rankings.csv", "README.md", "index.html", "pairs.csv", "by_question.csv"} <= names, names
    assert bad + more == []
    assert f"``{ODD_TASK}/acc``" in (out / "report.md").read_text()  # one code span around the backtick


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "a", texts, seed=0), build_tiny_model(root / "b", texts, seed=1)


def test_a_run_with_hostile_names_writes_no_live_label(tmp_path: Path, models: tuple[Path, Path]) -> None:
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(
        f"name: t\ntitle: 'T {IMG}'\nworkdir: work\nleaderboard: board\ntasks: [{FACTS}]\nlimit: 6\nbatch_size: 4\n"
        f"base: {{name: 'b[bold]', model_args: {{pretrained: {models[0]}}}, family: '=fam'}}\n"
        f"variants:\n  - {{name: '{NAMES['one']}', model_args: {{pretrained: {models[1]}}}, algorithm: \"{ALGORITHMS['one']}\", "
        f"family: '@x', size: '+1', data: '-{IMG}'}}\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(manifest)]) == 0
    assert "evaluate b[bold] (seed 0)" in out.getvalue()
    bad, scanned = scan_folder(tmp_path / "board")
    assert {"README.md", "index.html", "checkpoints.csv", "drift.csv"} <= {p.name for p in scanned}
    assert bad == []
