"""Outputs never touch what captrack did not write; a gate decides from this run's comparison; the run lock is a lock.

Issue 40's high items: `compare --out` and boards refuse a folder holding the user's files (naming the
first one, changing nothing) and list what they wrote in .captrack-manifest.json; an experiment without
`leaderboard:` gets a board folder of its own; `run --fail-on` gates on the comparison it computed, never
on a capabilities.csv on disk; the lock file is never followed through a link and a deleted one stops the
run; Ctrl-C is one line and exit 130.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.gate import GATE_EXIT

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = ".captrack-manifest.json"  # what a comparison or a board wrote (captrack.report.ownership.MANIFEST)
SCORES = "model,task,metric,value,base\nb,captrack_probe_c1_facts,acc,0.5,\nv,captrack_probe_c1_facts,acc,0.4,b\n"


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _user_files(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.md").write_text("# my thesis\n")
    (folder / "my_results.csv").write_text("a,b\n1,2\n")
    (folder / "config.json").write_text('{"lr": 0.1}\n')
    return _snapshot(folder)


# -- compare --out -------------------------------------------------------------------------------------------


def test_compare_out_refuses_a_folder_of_user_files_and_leaves_them_byte_identical(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text(SCORES)
    out = tmp_path / "out"
    before = _user_files(out)
    assert main(["compare", "--scores", str(scores), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "config.json" in err and "captrack did not write" in err and "Traceback" not in err
    assert _snapshot(out) == before


def test_compare_out_rewrites_its_own_folder_from_its_manifest_and_refuses_a_file_added_since(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text(SCORES)
    out = tmp_path / "out"
    assert main(["compare", "--scores", str(scores), "--out", str(out)]) == 0
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["written_by"] == "captrack compare"
    assert set(manifest["files"]) == {p.name for p in out.iterdir()} - {MANIFEST}
    assert main(["compare", "--scores", str(scores), "--out", str(out)]) == 0  # its own files: replaced
    (out / "notes.md").write_text("mine")
    before = _snapshot(out)
    assert main(["compare", "--scores", str(scores), "--out", str(out)]) == 1
    assert _snapshot(out) == before
    (out / "notes.md").unlink()
    (out / MANIFEST).unlink()  # a comparison written before manifests: its summary.json lists its files
    assert main(["compare", "--scores", str(scores), "--out", str(out)]) == 0


def test_compare_out_refuses_its_own_input_inside_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "scores.csv").write_text(SCORES)  # the old guard let any .csv be replaced: here, the input itself
    assert main(["compare", "--scores", str(out / "scores.csv"), "--out", str(out)]) == 1
    assert (out / "scores.csv").read_text() == SCORES


# -- leaderboard folders --------------------------------------------------------------------------------------


def _scores_board(folder: Path, scores: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "leaderboard.yaml").write_text(
        f"title: one\nscores: {scores}\ncomparisons:\n  - base: b\n    variants:\n      - {{name: v, algorithm: SFT}}\n")


def test_a_board_folder_holding_a_hand_written_page_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text(SCORES)
    board = tmp_path / "board"
    _scores_board(board, scores)
    (board / "README.md").write_text("# my own notes about this board\n")
    (board / "tasks").mkdir()
    (board / "tasks" / "howto.html").write_text("<p>how to read it</p>")
    before = _snapshot(board)
    assert main(["leaderboard", str(board)]) == 1
    assert "README.md (and 1 more)" in capsys.readouterr().err
    assert _snapshot(board) == before
    (board / "README.md").unlink()
    (board / "tasks" / "howto.html").unlink()
    assert main(["leaderboard", str(board)]) == 0
    manifest = json.loads((board / MANIFEST).read_text())
    assert "README.md" in manifest["files"] and "index.html" in manifest["files"]
    assert "leaderboard.yaml" in manifest["inputs"] and "leaderboard.yaml" not in manifest["files"]
    (board / "tasks").mkdir(exist_ok=True)
    (board / "tasks" / "howto.html").write_text("<p>added later</p>")
    assert main(["leaderboard", str(board)]) == 1
    assert (board / "tasks" / "howto.html").read_text() == "<p>added later</p>"


@pytest.mark.parametrize("name", ["demo", "curves", "mmlu-pro-instruct", "captrack-qwen3-80b"])
def test_committed_boards_without_a_manifest_are_recognised_as_captrack_s(name: str, tmp_path: Path) -> None:
    from captrack.report.ownership import ForeignFilesError, claim_folder

    board = tmp_path / name
    shutil.copytree(ROOT / "leaderboards" / name, board, ignore=shutil.ignore_patterns(MANIFEST, "runs"))
    definition = [board / "leaderboard.yaml"]  # `captrack leaderboard` reads it; a run writes it (its header says so)
    claimed = claim_folder(board, "leaderboard", definition)
    assert "README.md" in claimed.owned and "index.html" in claimed.owned and "capabilities.csv" in claimed.owned
    (board / "README.md").write_text("# hand-written\n")
    with pytest.raises(ForeignFilesError, match=r"README\.md"):
        claim_folder(board, "leaderboard", definition)


def test_a_symlink_in_a_board_folder_is_never_captrack_s(tmp_path: Path) -> None:
    from captrack.report.ownership import ForeignFilesError, claim_folder

    elsewhere = tmp_path / "site"
    elsewhere.mkdir()
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text("title: t\n")
    (board / "tasks").symlink_to(elsewhere)  # write_pages would write, and remove stale pages, in there
    with pytest.raises(ForeignFilesError, match="holds tasks,"):
        claim_folder(board, "leaderboard", [board / "leaderboard.yaml"])


# -- captrack run: the default board folder, a foreign board folder, the gate ---------------------------------

QUESTIONS = [{"question_id": q, "question": f"question {q}?", "options": ["w", "x", "y", "z", "v", "u"],
              "answer": "ABCDEF"[q % 6], "answer_index": q % 6, "cot_content": "", "category": "law", "src": "test"}
             for q in range(40)]


def _outputs(path: Path, correct: bool) -> str:
    items = [{**q, "generated_text": f"Answer: {q['answer'] if correct else 'J'}"} for q in QUESTIONS]
    path.write_text(json.dumps(items), encoding="utf-8")
    return str(path)


@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "shared"
    (folder / "data" / "mmlu_pro").mkdir(parents=True)
    (folder / "data" / "mmlu_pro" / "test.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    _outputs(folder / "right.json", True)
    _outputs(folder / "wrong.json", False)
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    return folder


def _experiment(path: Path, shared: Path, tuned: str, extra: str = "") -> Path:
    """An experiment of imported generations: base all right, `tuned` (right.json or wrong.json) for the variant."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"name: {path.stem}\nworkdir: work-{path.stem}\n{extra}"
        f'data: {{sources: "{shared}/data", configs: [mmlu_pro.full]}}\n'
        f'base: [{{name: base, import: {{format: mmlu-pro, path: "{shared}/right.json"}}}}]\n'
        f'variants:\n  - {{name: tuned, base: base, algorithm: SFT, import: {{format: mmlu-pro, path: "{shared}/{tuned}"}}}}\n')
    return path


def test_without_a_leaderboard_key_the_board_gets_a_folder_of_its_own(tmp_path: Path, shared: Path) -> None:
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.runner import run_experiment

    folder = tmp_path / "project"
    _user_files(folder)
    (folder / "README.md").write_text("# hand-written project notes\n")
    (folder / "tasks").mkdir()
    (folder / "tasks" / "howto.html").write_text("<p>how to</p>")
    first = _experiment(folder / "first.yaml", shared, "wrong.json")
    second = _experiment(folder / "second.yaml", shared, "right.json")
    mine = _snapshot(folder)
    boards = []
    for path in (first, second):
        experiment = load_experiment(path)
        run_experiment(experiment)
        boards.append(experiment.leaderboard)
    after = _snapshot(folder)
    assert {k: after.get(k) for k in mine} == mine  # every file of the user's as it was, none removed
    assert boards == [folder / "first-leaderboard", folder / "second-leaderboard"]
    assert (folder / "first-leaderboard" / "index.html").is_file() and (folder / "second-leaderboard" / "index.html").is_file()
    first_caps = (folder / "first-leaderboard" / "capabilities.csv").read_bytes()
    assert first_caps != (folder / "second-leaderboard" / "capabilities.csv").read_bytes()  # two boards, not one


def test_a_run_into_a_board_folder_of_user_files_is_refused_before_any_work(
        tmp_path: Path, shared: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "project"
    path = _experiment(folder / "exp.yaml", shared, "wrong.json", extra="leaderboard: .\n")
    (folder / "README.md").write_text("# hand-written\n")
    before = _snapshot(folder)
    assert main(["run", str(path)]) == 1
    err = capsys.readouterr().err
    assert "README.md" in err and "captrack did not write" in err and "Traceback" not in err
    assert _snapshot(folder) == before and not (folder / "work-exp").exists()


def test_fail_on_gates_on_this_runs_comparison_not_on_a_file_in_the_board_folder(tmp_path: Path, shared: Path) -> None:
    folder = tmp_path / "project"
    regressed = _experiment(folder / "a.yaml", shared, "wrong.json", extra="leaderboard: board\n")
    unchanged = _experiment(folder / "b.yaml", shared, "right.json", extra="leaderboard: board\n")
    assert main(["run", str(regressed), "--fail-on", "regressed"]) == GATE_EXIT
    assert main(["run", str(unchanged), "--fail-on", "regressed"]) == 0  # writes its own board into the same folder
    assert main(["run", str(regressed), "--fail-on", "regressed"]) == GATE_EXIT  # A again: still its own verdict
    assert main(["run", str(regressed), "--fail-on", "regressed"]) == GATE_EXIT  # every stage reused this time
    (folder / "board" / "capabilities.csv").unlink()
    assert main(["run", str(regressed), "--fail-on", "regressed"]) == GATE_EXIT
    assert (folder / "board" / "capabilities.csv").is_file()  # a board missing a file is rebuilt
    (folder / "board" / "capabilities.csv").write_text("level,variant,key,verdict\n")  # a planted table
    assert main(["run", str(regressed), "--fail-on", "regressed"]) == GATE_EXIT


# -- the run lock -------------------------------------------------------------------------------------------


def test_a_symlink_planted_as_the_lock_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    from captrack.pipeline.lock import LOCK_NAME, work_folder_lock

    work = tmp_path / "work"
    work.mkdir()
    target = tmp_path / "precious.txt"
    target.write_text("do not truncate me\n")
    (work / LOCK_NAME).symlink_to(target)
    with pytest.raises(InputError, match="is a symbolic link"):
        with work_folder_lock(work):
            pass
    assert target.read_text() == "do not truncate me\n"
    (work / LOCK_NAME).unlink()
    os.link(target, work / LOCK_NAME)  # a hard link: the same file under the lock's name
    with pytest.raises(InputError, match="hard link"):
        with work_folder_lock(work):
            pass
    assert target.read_text() == "do not truncate me\n"


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_lock_deleted_or_replaced_while_held_stops_the_run_at_the_next_stage(tmp_path: Path, how: str,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.pipeline import batches, runner
    from captrack.pipeline.lock import LockLostError, work_folder_lock
    from captrack.pipeline.stage import Stage

    work = tmp_path / "work"
    ran: list[str] = []
    second: list[bool] = []

    def first_stage() -> None:
        ran.append("first")
        (work / ".captrack-run.lock").unlink()
        if how == "replaced":
            with work_folder_lock(work):  # a second runner now gets a lock of its own beside this one
                second.append(True)

    stages = [Stage("first", work / "m1.json", {}, first_stage), Stage("second", work / "m2.json", {}, lambda: ran.append("second"))]
    monkeypatch.setattr(runner, "validate", lambda experiment: [])
    monkeypatch.setattr(runner, "plan", lambda experiment, console, shown=None: stages)
    monkeypatch.setattr(batches, "apply_thread_plan", lambda threads: None)

    class Experiment:
        workdir = work
        executor: dict[str, str] = {}  # noqa: RUF012 (a stand-in's class attribute, never mutated)
        source = tmp_path / "exp.yaml"

    with pytest.raises(LockLostError, match=f"was {how}.*run it again to resume"):
        runner.run_experiment(Experiment())  # type: ignore[arg-type]
    assert ran == ["first"] and second == ([True] if how == "replaced" else [])
    assert not (work / "m1.json").exists()  # the stage's marker is not written once the lock is not this run's


# -- Ctrl-C ---------------------------------------------------------------------------------------------------


def test_ctrl_c_during_a_run_is_one_line_and_exit_130(tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    from captrack.pipeline import runner

    def interrupted(*args: object, **kwargs: object) -> dict[str, float]:
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_experiment", interrupted)
    assert main(["run", str(_experiment(tmp_path / "e.yaml", shared, "wrong.json"))]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and "stopped" in err and "run the same command again to resume" in err
    assert len(err.strip().splitlines()) == 1
