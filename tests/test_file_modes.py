"""Written files get the mode the user's umask gives (0644 files, 0755 folders under 022), never tempfile's 0600."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard

FACTS = "captrack_probe_c1_facts"


@pytest.fixture(params=[0o022, 0o027])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    yield int(request.param)
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_compare_and_leaderboard_files_follow_the_umask(tmp_path: Path, umask: int) -> None:
    runs = tmp_path / "runs"
    write_run(runs / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 0, 0, 1, 1, 0, 1]})])
    write_run(runs / "sft", "sft", [FakeTask(FACTS, {"acc": [0, 1, 0, 1, 1, 0, 0, 1]})])
    out = tmp_path / "out"
    assert main(["compare", "--base", str(runs / "base"), "--variant", f"sft={runs / 'sft'}:SFT",
                 "--out", str(out), "--bootstrap", "50"]) == 0
    store = tmp_path / "store.duckdb"
    for name in ("base", "sft"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 50\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    build_leaderboard(board)
    file_mode, dir_mode = 0o666 & ~umask, 0o777 & ~umask
    files = [out / "report.md", out / "drift.csv", out / "summary.json", board / "index.html", board / "capabilities.csv",
             board / "README.md", board / "figures" / "heatmap.png", board / "tasks" / f"{FACTS}.html"]
    assert {str(p.relative_to(tmp_path)): oct(_mode(p)) for p in files} == {
        str(p.relative_to(tmp_path)): oct(file_mode) for p in files}
    assert oct(_mode(out)) == oct(dir_mode)
    assert oct(_mode(board / "tasks")) == oct(dir_mode)
    if umask == 0o022:
        assert _mode(board / "index.html") == 0o644 and _mode(out / "report.md") == 0o644 and _mode(out) == 0o755
