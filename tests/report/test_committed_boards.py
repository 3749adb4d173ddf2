"""Every committed leaderboard is current: rebuilt from its inputs, it matches the committed files byte for byte.

`make boards` rebuilds them: captrack-qwen3-80b from CapTrack's published files in the shared folder,
mmlu-pro-instruct from the MMLU-Pro outputs in the shared data (`captrack run` on its experiment.yaml),
the demo from `runs/demo` (which only `make demo` makes) and the curves board from `runs/curves` (`make
curves`). A board whose inputs are absent here is
skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from shared_paths import shared_dir

from captrack.compare.board import build_leaderboard

ROOT = Path(__file__).resolve().parents[2]
BOARDS = ROOT / "leaderboards"
_INPUTS = ("leaderboard.yaml", "experiment.yaml", ".captrack-manifest.json")  # the manifest: a local record, git-ignored


def _committed(folder: Path) -> dict[str, bytes]:
    """The board's generated files (the per-item pages of a board that does not commit them are left out)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in _INPUTS}


def _assert_same(rebuilt: Path, committed: Path, skip_tasks: bool = False) -> None:
    want, got = _committed(committed), _committed(rebuilt)
    if skip_tasks:  # not committed (git-ignored), though a local rebuild leaves them in the checkout
        got = {k: v for k, v in got.items() if not k.startswith("tasks/")}
        want = {k: v for k, v in want.items() if not k.startswith("tasks/")}
    assert sorted(got) == sorted(want)
    stale = [name for name in want if got[name] != want[name]]
    assert not stale, f"{committed.name}: {stale} differ from a rebuild; run `make boards` and commit the result"


def test_captrack_qwen3_80b_board_is_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    anchors = shared_dir() / "anchors" / "captrack_qwen3_80b"
    if not anchors.is_dir():
        pytest.skip(f"needs CapTrack's published files in {anchors} (the shared folder)")
    monkeypatch.setenv("CAPTRACK_SHARED", str(shared_dir()))
    board = tmp_path / "captrack-qwen3-80b"
    board.mkdir()
    shutil.copy(BOARDS / "captrack-qwen3-80b" / "leaderboard.yaml", board)
    build_leaderboard(board)
    _assert_same(board, BOARDS / "captrack-qwen3-80b")


@pytest.mark.parametrize(("name", "maker"), [("demo", "make demo (13-23 min)"), ("curves", "make curves (~13 min)")])
def test_board_of_a_local_run_is_current(name: str, maker: str, tmp_path: Path) -> None:
    store = ROOT / "runs" / name / "store.duckdb"
    if not store.is_file():
        pytest.skip(f"needs the runs ({store.relative_to(ROOT)}), which only {maker} makes")
    board = tmp_path / name
    board.mkdir()
    text = (BOARDS / name / "leaderboard.yaml").read_text().replace(f"store: ../../runs/{name}/store.duckdb", f"store: {store}")
    (board / "leaderboard.yaml").write_text(text)
    build_leaderboard(board)
    _assert_same(board, BOARDS / name)


@pytest.mark.slow
def test_mmlu_pro_instruct_board_is_current(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.runner import run_experiment

    outputs = shared_dir() / "data" / "mmlu_pro_outputs"
    if not outputs.is_dir():
        pytest.skip(f"needs the MMLU-Pro authors' outputs in {outputs} (the shared data)")
    monkeypatch.setenv("CAPTRACK_SHARED", str(shared_dir()))
    folder = tmp_path / "leaderboards" / "mmlu-pro-instruct"
    folder.mkdir(parents=True)
    shutil.copy(BOARDS / "mmlu-pro-instruct" / "experiment.yaml", folder)
    run_experiment(load_experiment(folder / "experiment.yaml"))
    _assert_same(folder, BOARDS / "mmlu-pro-instruct", skip_tasks=True)
    committed = (BOARDS / "mmlu-pro-instruct" / "leaderboard.yaml").read_text()
    assert (folder / "leaderboard.yaml").read_text() == committed
    assert os.path.relpath(tmp_path / "runs" / "mmlu-pro-instruct" / "store.duckdb", folder) in committed
