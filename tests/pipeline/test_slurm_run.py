"""`captrack run` through the slurm executor on a real single-node Slurm cluster (scripts/slurm-up.sh, `make slurm`).

Each test drives `captrack run` as a separate process, as a user does, on two tiny real models (tests/tinymodel.py),
one trained here through a Slurm job, and reads Slurm's own record of every job: squeue while it is known, the job
completion log (jobcomp/filetxt) once it ended. The reference is the same experiment through the local executor,
in the same folder, so that every path in the board is the same: the board's files must be byte-identical.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from slurmcluster import ON_SLURM, TWO_TINY_CHECKPOINTS
from tinymodel import build_tiny_model

CAPTRACK = str(Path(sys.executable).with_name("captrack"))


pytestmark = ON_SLURM

EXPERIMENT = TWO_TINY_CHECKPOINTS
TRAINED = "  - {name: sft, train: {method: sft, steps: 2, rows: 8}, algorithm: SFT, family: tiny}\n"


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for every run of this module (the runs take turns in `place / "run"`), with the two models."""
    root = tmp_path_factory.mktemp("slurm")
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    build_tiny_model(root / "models" / "a", texts, seed=0)
    build_tiny_model(root / "models" / "b", texts, seed=1)
    return root


def _fresh(place: Path, trained: bool = False) -> Path:
    """An empty run folder holding the experiment (the same path for every run, so the boards can be compared)."""
    folder = place / "run"
    _EARLIER.update(_submitted(folder))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    models = place / "models"
    (folder / "exp.yaml").write_text(EXPERIMENT.format(base=models / "a", other=models / "b",
                                                       trained=TRAINED if trained else ""))
    return folder


def _env() -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}


def _run(folder: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """`captrack run exp.yaml ARGS` in `folder`, to its end."""
    return subprocess.run([CAPTRACK, "run", "exp.yaml", *args], cwd=folder, capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _start(folder: Path, *args: str) -> subprocess.Popen[str]:
    """`captrack run exp.yaml ARGS` in `folder`, running on (its output in driver-N.log)."""
    log = folder / f"driver-{len(list(folder.glob('driver-*.log')))}.log"
    # Ctrl-C as at a terminal: a test run started in a shell's background (CI scripts, `cmd &`) passes SIGINT on
    # ignored, and a driver that inherits it ignored keeps ignoring it, as every background job does.
    return subprocess.Popen([CAPTRACK, "run", "exp.yaml", *args], cwd=folder, stdout=log.open("w"),
                            stderr=subprocess.STDOUT, text=True, env=_env(),
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _driver_log(folder: Path) -> str:
    return "\n".join(f"{p.name}:\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(folder.glob("driver-*.log")))


def _board(folder: Path) -> dict[str, bytes]:
    board = folder / "board"
    return {str(p.relative_to(board)): p.read_bytes() for p in sorted(board.rglob("*")) if p.is_file()}


Reference = Callable[[bool], dict[str, bytes]]


@pytest.fixture(scope="module")
def reference(place: Path) -> Reference:
    """The board of the experiment (without or with its training) through the local executor, run once when first asked."""
    boards: dict[bool, dict[str, bytes]] = {}

    def board(trained: bool) -> dict[str, bytes]:
        if trained not in boards:
            folder = _fresh(place, trained)
            done = _run(folder, "--executor", "local")
            assert done.returncode == 0, done.stdout + done.stderr
            boards[trained] = _board(folder)
        return boards[trained]

    return board


_EARLIER: set[str] = set()
"""Jobs of earlier tests from the same folder (each test's _fresh adds them): never counted as this test's."""


def _job_id(fields: dict[str, str]) -> str:
    """A completion record's job id as sbatch and squeue name it: ``ARRAYID_TASK`` for an array's task (stages ready
    together go as one array), else its JobId."""
    array, task = fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", "")
    if array.isdigit() and array != "0" and task.isdigit() and int(task) < 4294967294:
        return f"{array}_{task}"
    return fields["JobId"]


def _records(folder: Path) -> dict[str, str]:
    """Slurm's final state of every job this test submitted from `folder`, from the job completion log (WorkDir)."""
    from captrack.pipeline.executors.slurm_queue import completion_log

    log = completion_log()
    assert log is not None, "the cluster keeps no job completion log (scripts/slurm-up.sh sets jobcomp/filetxt)"
    states: dict[str, str] = {}
    for line in log.read_text(errors="replace").splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        job = _job_id(fields)
        if fields.get("WorkDir") == str(folder) and fields.get("JobState") not in ("PENDING", "REQUEUED") \
                and job not in _EARLIER:
            states[job] = fields["JobState"]
    return states


def _queued(folder: Path) -> list[str]:
    """The jobs from `folder` that squeue lists (queued, running or completing)."""
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%Z"], capture_output=True, text=True, check=True).stdout
    return [i for i, where in (line.split("|", 1) for line in out.splitlines() if "|" in line)
            if where == str(folder) and i not in _EARLIER]


def _running(folder: Path) -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-t", "RUNNING", "-o", "%i|%Z|%j"], capture_output=True, text=True).stdout
    return [line.split("|")[0] for line in out.splitlines() if f"|{folder}|" in line]


def _submitted(folder: Path) -> set[str]:
    """Every Slurm job id submitted from `folder`: those squeue lists and those the job completion log recorded."""
    return set(_queued(folder)) | set(_records(folder))


def _wait(what: str, ready: Callable[[], object], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(1)


def _log_of(folder: Path, job: str) -> Path:
    return folder / "work" / "slurm" / f"{job}_0_log.out"


@pytest.fixture(autouse=True)
def _no_jobs_left(place: Path) -> Iterator[None]:
    yield
    left = _queued(place / "run")
    if left:
        subprocess.run(["scancel", *left], check=False)


@pytest.mark.parametrize("trained", [False, True], ids=["evaluations", "training-then-evaluations"])
def test_a_run_through_slurm_gives_the_local_board(place: Path, reference: Reference,
                                                   trained: bool) -> None:
    expected = reference(trained)  # first: it runs in the same folder
    folder = _fresh(place, trained)
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _board(folder) == expected
    states = _records(folder)
    print(f"Slurm's job completion log for {folder}: {states}")
    assert sorted(states.values()) == ["COMPLETED"] * (4 if trained else 2)  # + the training and its evaluation
    assert "Slurm job" in done.stdout and "submitted" in done.stdout
    again = _run(folder)
    assert again.returncode == 0 and _records(folder) == states  # all reused: nothing submitted again


def test_a_driver_killed_and_started_again_reattaches_without_submitting_twice(
        place: Path, reference: Reference) -> None:
    expected = reference(False)  # first: it runs in the same folder
    folder = _fresh(place)
    driver = _start(folder)
    _wait("both evaluation jobs running", lambda: len(_running(folder)) == 2)
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    before = _submitted(folder)
    print(f"after kill -9: jobs {sorted(before)}, squeue lists {_queued(folder)}")
    assert len(before) == 2 and set(_queued(folder)) == before  # the jobs outlive their driver
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "re-attached" in done.stdout
    print(f"after the second driver: jobs {sorted(_submitted(folder))}, Slurm's record {_records(folder)}")
    assert _submitted(folder) == before, "a stage was submitted twice"
    assert sorted(_records(folder).values()) == ["COMPLETED", "COMPLETED"]
    assert _board(folder) == expected


def test_a_requeued_evaluation_job_runs_again_and_the_run_finishes(place: Path,
                                                                   reference: Reference) -> None:
    expected = reference(False)  # first: it runs in the same folder
    folder = _fresh(place)
    driver = _start(folder)
    _wait("an evaluation job running", lambda: _running(folder))
    job = _running(folder)[0]
    _wait("its worker started", lambda: "captrack: Slurm job" in _log_of(folder, job).read_text(errors="replace")
          if _log_of(folder, job).is_file() else False)
    subprocess.run(["scontrol", "requeue", job], check=True)
    # Slurm holds a requeued job for two minutes (its begin time); let it start now.
    _wait("the job back in the queue", lambda: job in _queued(folder) and job not in _running(folder), 120)
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=False)
    assert driver.wait(timeout=900) == 0, (folder / "driver-0.log").read_text()
    log = _log_of(folder, job).read_text(errors="replace")
    print("\n".join(line for line in log.splitlines() if "captrack: Slurm job" in line or "REQUEUE" in line))
    assert f"Slurm job {job} (restart 1)" in log, log[-2000:]
    assert len(_submitted(folder)) == 2 and sorted(_records(folder).values()) == ["COMPLETED", "COMPLETED"]
    assert _board(folder) == expected


def test_a_cancelled_job_fails_its_stage_alone_and_the_next_run_submits_only_that_stage(place: Path) -> None:
    folder = _fresh(place)
    driver = _start(folder)
    _wait("both evaluation jobs running", lambda: len(_running(folder)) == 2)
    records = {p.name: p.read_text() for p in (folder / "work" / "jobs").glob("*.record.json")}
    cancelled = next(re.search(r'"job_id": "([\d_]+)"', text).group(1) for name, text in sorted(records.items())  # type: ignore[union-attr]
                     if name.startswith("eval-other"))
    subprocess.run(["scancel", cancelled], check=True)
    assert driver.wait(timeout=900) != 0
    said = (folder / "driver-0.log").read_text()
    print(said[said.find("evaluate other (seed 0) failed"):][:1500])
    assert re.search(rf"evaluate other \(seed 0\).*Slurm job {cancelled} CANCELLED", said, re.DOTALL), said
    assert "last lines of" in said and f"{cancelled}_0_log.out" in said
    assert (folder / "work" / "markers" / "eval-base-0.json").is_file()  # the independent stage finished
    assert not (folder / "work" / "markers" / "eval-other-0.json").exists()
    before = _submitted(folder)
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    new = _submitted(folder) - before
    print(f"jobs before the second run {sorted(before)}, submitted by it {sorted(new)}")
    assert len(new) == 1 and _records(folder)[new.pop()] == "COMPLETED"
    assert "evaluate base (seed 0): unchanged" in done.stdout or "evaluate base (seed 0)" not in done.stdout


def test_ctrl_c_cancels_the_runs_jobs(place: Path) -> None:
    folder = _fresh(place)
    driver = _start(folder)
    _wait("both jobs submitted", lambda: len(_queued(folder)) == 2)
    jobs = _queued(folder)
    driver.send_signal(signal.SIGINT)
    assert driver.wait(timeout=120) != 0, _driver_log(folder)
    print(f"jobs {jobs}; squeue after Ctrl-C: {_queued(folder)}; Slurm's record: {_records(folder)}")
    assert _queued(folder) == [], "jobs of an interrupted run are still queued"
    records = _records(folder)  # an array cancelled while pending is one record, under the array's id
    assert {records.get(j, records.get(j.split("_")[0])) for j in jobs} == {"CANCELLED"}
    from captrack.pipeline.executors.slurm_queue import job_states

    assert {s.state for s in job_states(jobs).values()} == {"CANCELLED"} and set(job_states(jobs)) == set(jobs)


def test_detach_submits_returns_and_a_later_run_finishes(place: Path, reference: Reference) -> None:
    expected = reference(False)  # first: it runs in the same folder
    folder = _fresh(place)
    detached = _run(folder, "--detach", timeout=300)
    assert detached.returncode == 0, detached.stdout + detached.stderr
    jobs = _queued(folder)
    assert len(jobs) == 2 and "squeue" in detached.stdout and "captrack run" in detached.stdout
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert _submitted(folder) == set(jobs)
    assert _board(folder) == expected
