"""`captrack run` survives a second runner, a killed parent and a full disk.

One runner per work folder (a second refuses naming the holder's PID, or waits); workers end with
their parent; markers are written whole or not at all, and an unreadable one means "not done"; the
store is replaced only by one that was checkpointed, reopened and counted; ${VAR} works in workdir.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from captrack.errors import InputError
from captrack.files import write_atomic
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import Stage
from captrack.processes import process_gone

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_runner_refuses_naming_the_holder_or_waits(tmp_path: Path) -> None:
    from captrack.pipeline.lock import WorkFolderBusyError, work_folder_lock

    with work_folder_lock(tmp_path / "work"):
        with pytest.raises(WorkFolderBusyError, match=rf"in use by another `captrack run` \(PID {os.getpid()},.*--wait"):
            with work_folder_lock(tmp_path / "work"):
                pass
    held, release = threading.Event(), threading.Event()
    told: list[str] = []

    def hold() -> None:
        with work_folder_lock(tmp_path / "work"):
            held.set()
            release.wait(60)  # until the waiter said it waits (no fixed hold a loaded machine can outlast)

    def tell(line: str) -> None:
        told.append(line)
        release.set()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(60)
    with work_folder_lock(tmp_path / "work", wait=True, poll_s=0.05, log=tell):
        assert release.is_set()  # it got the lock only after it said it waits and the holder let go
    holder.join()
    assert len(told) == 1 and "waiting" in told[0]


def test_a_second_captrack_run_on_one_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import fcntl

    from captrack.cli import main

    manifest = tmp_path / "exp.yaml"
    manifest.write_text("name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 2\n"
                        "base: {name: base, model_args: {pretrained: smollm2-135m-instruct}}\n"
                        "variants:\n  - {name: v, model_args: {pretrained: smollm2-135m-instruct}, algorithm: SFT}\n")
    (tmp_path / "work").mkdir()
    with (tmp_path / "work" / ".captrack-run.lock").open("a+") as lock:  # as a runner holding the folder does
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write(f"PID {os.getpid()}, started now\n")
        lock.flush()
        assert main(["run", str(manifest), "--dry-run"]) == 0  # a dry run only reads
        assert main(["run", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert f"PID {os.getpid()}" in err and "Traceback" not in err


_CHILD = """
import sys, time
from pathlib import Path
from captrack.pipeline import stage_job
from captrack.pipeline.jobs import StageJob
started = lambda args: (open(args["ready"], "w").close(), time.sleep(60))
stage_job.JOB_KINDS.add("sleep", started)
spec = StageJob("sleep", "s", "s", {"ready": sys.argv[1]}).write(Path(sys.argv[2]))
stage_job._main([str(spec)])  # what `python -m captrack.pipeline.stage_job SPEC` runs
"""
_PARENT = """
import sys, time
from captrack.processes import spawn
child = spawn([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]])  # as the local executor starts a worker
print(child.pid, flush=True)
time.sleep(60)
"""


def test_a_worker_dies_with_its_killed_parent(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ready = tmp_path / "stage-started"
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, _CHILD, str(ready), str(tmp_path / "s.json")],
                              stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    deadline = time.time() + 120
    while not ready.exists() and time.time() < deadline:  # the worker is running its stage
        time.sleep(0.1)
    assert ready.exists(), "the worker never started its stage"
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        if process_gone(child):  # a zombie not yet reaped by PID 1 is gone too
            break
        time.sleep(0.1)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the worker outlived its killed parent")


def _stage(tmp_path: Path) -> Stage:
    return Stage("s", tmp_path / "markers" / "s.json", {"a": 1}, lambda: None)


def test_an_empty_or_cut_marker_means_not_done(tmp_path: Path) -> None:
    stage = _stage(tmp_path)
    stage.marker.parent.mkdir()
    for text in ("", '{"config_hash": "ab', "\x00\x00", "[1]"):
        stage.marker.write_text(text)
        assert stage.done() is False


def test_a_full_disk_at_the_marker_keeps_the_old_one_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stage = _stage(tmp_path)
    stage.marker.parent.mkdir()
    stage.write_marker()
    before = stage.marker.read_bytes()
    stage.inputs = {"a": 2}

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError, match="No space"):
        stage.write_marker()
    monkeypatch.undo()
    assert stage.marker.read_bytes() == before and [p.name for p in stage.marker.parent.iterdir()] == ["s.json"]
    assert stage.done() is False  # inputs changed: the stage runs again


def test_atomic_files_get_the_umask_mode_not_mkstemp_s(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert (write_atomic(tmp_path / "a.json", "{}").stat().st_mode & 0o777) == 0o644
        os.umask(0o027)
        assert (write_atomic(tmp_path / "b.json", b"{}").stat().st_mode & 0o777) == 0o640
    finally:
        os.umask(old)


def _make_store(path: Path, rows: int) -> None:
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE runs (run_id VARCHAR); CREATE TABLE samples (v INTEGER)")
    con.execute("INSERT INTO runs VALUES ('r')")
    con.execute(f"INSERT INTO samples SELECT * FROM range({rows})")
    con.close()


def test_the_store_is_replaced_only_by_a_verified_one(tmp_path: Path) -> None:
    from captrack.results.publish import publish_store

    good, new = tmp_path / "store.duckdb", tmp_path / "store.tmp.duckdb"
    _make_store(good, 5)
    new.write_bytes(b"")  # what a full disk left: no tables
    with pytest.raises(InputError, match=r"could not be verified.*earlier store .* is kept"):
        publish_store(new, good, 1, 7)
    _make_store(new, 3)  # a store with other counts than were ingested
    with pytest.raises(InputError, match="holds 1 runs and 3 rows where 1 and 7"):
        publish_store(new, good, 1, 7)
    assert not new.exists()
    con = duckdb.connect(str(good), read_only=True)
    assert con.execute("SELECT count(*) FROM samples").fetchone() == (5,)
    con.close()
    _make_store(new, 7)
    publish_store(new, good, 1, 7)
    assert not new.exists() and not (tmp_path / "store.duckdb.wal").exists()


def test_env_vars_expand_in_workdir_and_leaderboard(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CT_WORK", str(tmp_path / "elsewhere"))
    manifest = tmp_path / "exp.yaml"
    manifest.write_text("name: t\nworkdir: ${CT_WORK}/w\nleaderboard: ${CT_BOARD:-boards}/b\n"
                        "tasks: [captrack_probe_c1_facts]\nbase: {name: base, model_args: {pretrained: x}}\n"
                        "variants:\n  - {name: v, model_args: {pretrained: y}}\n")
    experiment = load_experiment(manifest)
    assert experiment.workdir == tmp_path / "elsewhere" / "w"
    assert experiment.leaderboard == tmp_path / "boards" / "b"


@pytest.mark.parametrize("name", ["..", "a/b", "."])
def test_a_checkpoint_name_must_be_a_folder_name(tmp_path: Path, name: str) -> None:
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(json.dumps({"base": {"name": "base", "model_args": {"pretrained": "x"}},
                                    "variants": [{"name": name, "model_args": {"pretrained": "y"}}]}))
    with pytest.raises(InputError, match="cannot name a folder"):
        load_experiment(manifest)
