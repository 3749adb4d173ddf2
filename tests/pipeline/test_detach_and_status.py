"""`captrack run --detach` where jobs cannot outlive the run, and `--status` telling what still runs (issue 51):
--detach with the local executor is refused before anything runs; a local job whose worker or driver is gone is
`lost`, never `running`; after Ctrl-C the cancelled jobs are `stopped`; a relative `pretrained` reads from any folder."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from captrack.cli import main
from captrack.pipeline.executors import JobRecord
from captrack.pipeline.experiment import Experiment, load_experiment
from captrack.pipeline.layout import WorkFolder
from captrack.pipeline.runner import Stage, plan
from captrack.pipeline.status import stage_states

TITLE = "evaluate v (seed 0)"


def _manifest(folder: Path, pretrained: str = "/nonexistent/captrack-test-model", executor: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "exp.yaml"
    path.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 2\n"
                    f"base: {{name: base, model_args: {{pretrained: {pretrained}}}}}\n"
                    f"variants:\n  - {{name: v, model_args: {{pretrained: {pretrained}}}, algorithm: SFT}}\n{executor}")
    return path


def _quiet() -> Console:
    return Console(file=io.StringIO())


def _job_id(manifest: Path, title: str = TITLE) -> str:
    stage = next(s for s in plan(load_experiment(manifest), _quiet()) if s.title == title)
    assert stage.job is not None
    return stage.job(1).id


def _write_record(manifest: Path, job: str, **fields: str) -> None:
    """A record as a driver writes it (JSON, so the test reads the same on a captrack without the driver field)."""
    path = manifest.parent / "work" / "jobs" / f"{job}.record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"job": job, "executor": "local", "host": "h", "gpus": "", "log": "", **fields}))


def _evaluation_stage(folder: Path) -> tuple[Path, Experiment, Stage]:
    """The experiment file, the experiment and its stage TITLE (a job of the local executor)."""
    manifest = _manifest(folder)
    experiment = load_experiment(manifest)
    stage = next(s for s in plan(experiment, _quiet()) if s.title == TITLE)
    assert stage.job is not None
    return manifest, experiment, stage


def _state(manifest: Path, title: str = TITLE) -> str:
    return {s.title: s.state for s in stage_states(load_experiment(manifest), _quiet())}[title]


def test_detach_with_the_local_executor_is_refused_before_anything_runs(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    for executor, args in (("", []), ("executor: {name: slurm}\n", ["--executor", "local"])):
        manifest = _manifest(tmp_path / f"e{len(args)}", executor=executor)
        assert main(["run", str(manifest), "--detach", *args]) == 1
        err = capsys.readouterr().err
        assert "--detach needs an executor whose jobs run on" in err and "nothing was started" in err
        assert len(err.strip().splitlines()) == 1
        assert not (manifest.parent / "work").exists(), "something ran before the refusal"


def test_status_shows_a_local_job_whose_worker_is_gone_as_lost(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    manifest = _manifest(tmp_path)
    job = _job_id(manifest)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # reaped: its PID names no process
    _write_record(manifest, job, job_id=str(dead.pid), state="running")
    assert _state(manifest) == "lost"
    assert main(["run", str(manifest), "--status"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.endswith(TITLE))
    assert line.split()[0] == "lost" and str(dead.pid) in line
    spec = manifest.parent / "work" / "jobs" / f"{job}.json"
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(spec)])  # runs this job's spec
    try:
        _write_record(manifest, job, job_id=str(worker.pid), state="running")
        assert _state(manifest) == "running"
        _write_record(manifest, job, job_id=str(os.getpid()), state="running")  # alive, but not this job's worker
        assert _state(manifest) == "lost"
    finally:
        worker.kill()
        worker.wait()


def test_status_shows_a_queued_local_job_of_a_dead_driver_as_lost(tmp_path: Path) -> None:
    manifest = _manifest(tmp_path)
    job = _job_id(manifest)
    driver = subprocess.Popen([sys.executable, "-c", "pass"])
    driver.wait()
    _write_record(manifest, job, job_id="", state="queued", driver=str(driver.pid))
    assert _state(manifest) == "lost"
    _write_record(manifest, job, job_id="", state="queued", driver=str(os.getpid()))
    assert _state(manifest) == "queued"


def test_after_ctrl_c_the_stages_jobs_are_stopped_not_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real Ctrl-C (SIGINT to this process) while a local worker runs: the worker is killed and recorded stopped."""
    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits SIGINT ignored
    try:
        _interrupt_a_running_job(tmp_path)
    finally:
        signal.signal(signal.SIGINT, previous)


def _interrupt_a_running_job(tmp_path: Path) -> None:
    from captrack.pipeline.dispatch import run_jobs
    from captrack.pipeline.executors.local import LocalExecutor

    manifest, experiment, stage = _evaluation_stage(tmp_path)
    record = JobRecord.path(experiment.work, stage.job(1).id)

    def interrupt_once_running() -> None:
        deadline = time.monotonic() + 600  # a loaded 2-core machine can keep the job queued for minutes
        while time.monotonic() < deadline:
            if record.is_file() and json.loads(record.read_text()).get("state") == "running":
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=interrupt_once_running, daemon=True)
    watcher.start()
    executor = LocalExecutor(experiment.work, {}, log=lambda _: None)
    with pytest.raises(KeyboardInterrupt):
        run_jobs(experiment.work, [stage], executor, 1, _quiet(), lambda *_: None)
        time.sleep(30)  # not reached when the worker was still running at the interrupt
    watcher.join()
    _assert_stopped_and_gone(manifest, record)


def _assert_stopped_and_gone(manifest: Path, record: Path) -> None:
    written = json.loads(record.read_text())
    assert written["state"] == "stopped" and written["job_id"].isdigit()
    with pytest.raises(ProcessLookupError):
        os.kill(int(written["job_id"]), 0)  # the worker is gone
    assert _state(manifest) == "stopped"


def test_a_ctrl_c_right_after_the_running_record_is_written_still_records_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race the Ctrl-C test above lost once in CI: the interrupt lands the instant the driver has written the
    job's `running` record, before the driver noted the status. The record must still end `stopped`."""
    from captrack.pipeline.dispatch import run_jobs
    from captrack.pipeline.executors.local import LocalExecutor

    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    manifest, experiment, stage = _evaluation_stage(tmp_path)
    write = JobRecord.write

    def write_then_interrupt(self: JobRecord, work: WorkFolder) -> None:
        write(self, work)
        if self.state == "running":
            raise KeyboardInterrupt

    monkeypatch.setattr(JobRecord, "write", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_jobs(experiment.work, [stage], LocalExecutor(experiment.work, {}, log=lambda _: None), 1, _quiet(),
                 lambda *_: None)
    monkeypatch.setattr(JobRecord, "write", write)
    assert stage.job is not None
    _assert_stopped_and_gone(manifest, JobRecord.path(experiment.work, stage.job(1).id))


def test_a_ctrl_c_between_starting_a_worker_and_holding_it_leaves_no_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt lands after the worker process started but before the executor noted it (which close() reads to
    stop its workers): the worker must not run on."""
    from captrack.pipeline.dispatch import run_jobs
    from captrack.pipeline.executors import local
    from captrack.processes import process_gone

    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    _, experiment, stage = _evaluation_stage(tmp_path)
    started: list[int] = []

    def interrupted(job: object, spec: object, process: subprocess.Popen[bytes], *_: object) -> None:
        started.append(process.pid)
        raise KeyboardInterrupt

    monkeypatch.setattr(local, "_Running", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_jobs(experiment.work, [stage], local.LocalExecutor(experiment.work, {}, log=lambda _: None), 1, _quiet(),
                 lambda *_: None)
    assert len(started) == 1 and process_gone(started[0])


def test_status_reads_a_relative_pretrained_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`pretrained: models/base` is the folder beside the experiment file, wherever `captrack run` starts."""
    folder = tmp_path / "exp"
    (folder / "models" / "base").mkdir(parents=True)
    (folder / "models" / "base" / "config.json").write_text("{}")
    manifest = _manifest(folder, pretrained="models/base")
    resolve = next(s for s in plan(load_experiment(manifest), _quiet()) if s.title.startswith("resolve base model"))
    monkeypatch.chdir(folder)
    resolve.write_marker()  # the run resolved it (from the experiment's folder)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(manifest), "--status"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "resolve base model" in out and "1/" in out.splitlines()[-1]
    assert load_experiment(manifest).base.model_args["pretrained"] == str(folder / "models" / "base")
