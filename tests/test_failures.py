"""Every failure a user can meet is one line naming the file (never a traceback), and pages do not depend on the cwd.

Also: the lm-eval start-up hook fails open, a leaderboard with nothing measurable is still written,
a malformed data-build source fails only its config, and a missing item text is said once.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

ROOT = Path(__file__).resolve().parents[1]
FACTS = "captrack_probe_c1_facts"


@pytest.mark.parametrize(("exc", "said"), [
    (OSError(errno.ENOSPC, "No space left on device", "/w/store.duckdb"), "/w/store.duckdb: No space left on device; free"),
    (OSError(errno.ELOOP, "Too many levels of symbolic links", "/w/x"), "/w/x: Too many levels of symbolic links; a symbolic link"),
    (IsADirectoryError(errno.EISDIR, "Is a directory", "/w/f"), "/w/f: Is a directory; give a file"),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "not UTF-8"),
])
def test_failures_become_one_line_messages(exc: BaseException, said: str) -> None:
    from captrack.failures import failure_message

    message = failure_message(exc)
    assert message is not None and said in message and "\n" not in message


def test_a_bug_keeps_its_traceback() -> None:
    from captrack.failures import failure_message

    assert failure_message(KeyError("x")) is None and failure_message(ZeroDivisionError()) is None


def test_cli_prints_os_errors_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    loop = tmp_path / "loop"
    loop.symlink_to(tmp_path / "loop")
    assert main(["ingest", str(loop), "--store", str(tmp_path / "s.duckdb")]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error:") and len(err.strip().splitlines()) == 1


def test_ingest_with_a_markup_name_stores_and_prints_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path / "r", "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    assert main(["ingest", str(tmp_path / "r"), "--store", str(tmp_path / "s.duckdb"), "--name", "weird[/]"]) == 0
    assert "model 'weird[/]'" in capsys.readouterr().err


def test_pages_do_not_depend_on_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    write_run(work / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 1, 1]}, doc_text={0: "the question zero"})])
    write_run(work / "var", "var", [FakeTask(FACTS, {"acc": [0, 1, 0, 1]}, doc_text={0: "the question zero"})])
    monkeypatch.chdir(work)  # runs and store typed relative to here
    for name in ("base", "var"):
        assert main(["ingest", name, "--store", "s.duckdb", "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: T\nstore: {work / 's.duckdb'}\nbootstrap: 20\n"
                                            "comparisons:\n  - base: base\n    variants:\n      - {name: var, algorithm: SFT}\n")
    monkeypatch.chdir(tmp_path / "board")
    assert main(["leaderboard", str(board)]) == 0
    page = (board / "tasks" / f"{FACTS}.html").read_text()
    assert "the question zero" in page and "text unavailable" not in page


def test_a_missing_text_is_said_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 1, 1]})])
    write_run(tmp_path / "var", "var", [FakeTask(FACTS, {"acc": [0, 1, 0, 0]})])
    store = tmp_path / "s.duckdb"
    for name in ("base", "var"):
        assert main(["ingest", str(tmp_path / name), "--store", str(store), "--name", name]) == 0
    for path in (tmp_path / "var").rglob("samples_*.jsonl"):
        path.unlink()
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: T\nstore: {store}\nbootstrap: 20\n"
                                            "comparisons:\n  - base: base\n    variants:\n      - {name: var}\n")
    with caplog.at_level(logging.WARNING, logger="captrack"):
        assert main(["leaderboard", str(board)]) == 0
    said = [r.getMessage() for r in caplog.records if "item texts missing" in r.getMessage()]
    assert len(said) == 1 and "is gone" in said[0]


def test_a_leaderboard_with_no_measurable_capability_is_written(tmp_path: Path) -> None:
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": [0, 0, 0, 0]})])  # base 0: every drift is n/a
    write_run(tmp_path / "var", "var", [FakeTask(FACTS, {"acc": [0, 1, 0, 1]})])
    store = tmp_path / "s.duckdb"
    for name in ("base", "var"):
        assert main(["ingest", str(tmp_path / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: T\nstore: {store}\nbootstrap: 20\n"
                                            "comparisons:\n  - base: base\n    variants:\n      - {name: var}\n")
    assert main(["leaderboard", str(board)]) == 0
    assert (board / "figures" / "heatmap.png").is_file() and (board / "index.html").is_file()


def test_a_malformed_build_source_fails_only_its_config(tmp_path: Path) -> None:
    from captrack.official.build import build_mirror

    (tmp_path / "src" / "gsm8k").mkdir(parents=True)
    for split in ("test", "train"):
        (tmp_path / "src" / "gsm8k" / f"{split}.jsonl").write_text("[1, 2]\n\"x\"\n")
    (result,) = build_mirror(tmp_path / "src", tmp_path / "mirror", ["gsm8k.subset"])
    assert not result.built and "source files unusable" in result.reason


_NO_CAPTRACK = """
import sys
sys.modules["captrack"] = None  # the package is gone; the hook module (a stale install) is still there
import captrack_lmeval_hook
captrack_lmeval_hook.install()
from lm_eval.tasks import TaskManager
manager = TaskManager(include_defaults=False, include_path=[])
print("ok", len(manager.all_tasks))
"""


def test_the_hook_leaves_lm_eval_untouched_when_captrack_is_gone() -> None:
    out = subprocess.run([sys.executable, "-c", _NO_CAPTRACK], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("ok") and "Traceback" not in out.stderr


def test_the_pth_line_is_silent_when_the_hook_module_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    line = (ROOT / "captrack-lmeval-hook.pth").read_text().strip()
    assert line.startswith("import ")  # site.py runs .pth lines starting with import
    monkeypatch.setitem(sys.modules, "captrack_lmeval_hook", None)
    exec(line, {})  # no ImportError, nothing printed


def test_a_samples_file_changing_while_ingested_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import captrack.results.store as store_module

    write_run(tmp_path / "r", "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    calls = iter(range(100))
    monkeypatch.setattr(store_module, "file_state", lambda path: (next(calls), 0))  # grows between read and hash
    assert main(["ingest", str(tmp_path / "r"), "--store", str(tmp_path / "s.duckdb")]) == 1
    monkeypatch.undo()
    import duckdb

    con = duckdb.connect(str(tmp_path / "s.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM samples").fetchone() == (0,)  # nothing half-stored
    con.close()
