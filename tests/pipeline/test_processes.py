"""The process floor (captrack.processes): children that die with their parent, however it ends (kill -9 included),
for the comparison's readers and the stage workers alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from captrack.processes import worker_count

ROOT = Path(__file__).resolve().parents[2]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by its new parent) is gone for our purpose
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _kill_parent_and_watch(parent: subprocess.Popen[str], children: list[int]) -> list[int]:
    """SIGKILL `parent`; the children still alive 15 s later (killed here, so none is left behind)."""
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 15
    while time.time() < deadline and any(_alive(c) for c in children):
        time.sleep(0.1)
    left = [c for c in children if _alive(c)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    return left


def _start(script: str, *args: str) -> tuple[subprocess.Popen[str], list[int]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    parent = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    pids = [int(x) for x in parent.stdout.readline().split()]
    assert pids, "the parent started no child"
    return parent, pids


_READER_PARENT = """
import os, sys
from captrack.compare.readers import WORKER_MODULE
from captrack.processes import spawn
os.mkfifo(sys.argv[1])  # the job file: the reader blocks opening it, as it would reading a large store
child = spawn([sys.executable, "-m", WORKER_MODULE, sys.argv[1], sys.argv[2]])  # as read_in_workers starts a reader
print(child.pid, flush=True)
child.wait()
"""


def test_a_comparison_reader_dies_when_its_caller_is_killed(tmp_path: Path) -> None:
    parent, (reader,) = _start(_READER_PARENT, str(tmp_path / "job"), str(tmp_path / "out"))
    deadline = time.time() + 60
    while time.time() < deadline and "captrack.compare.readers" not in Path(f"/proc/{reader}/cmdline").read_text(errors="replace"):
        time.sleep(0.1)  # exec'd: the reader module runs (its parent-death signal was armed before exec)
    assert _alive(reader)
    assert _kill_parent_and_watch(parent, [reader]) == [], "the reader outlived its killed caller"


_WORKER_PARENT = """
import subprocess, sys, time
from captrack.processes import spawn
worker = spawn([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[3]],  # as the local executor starts a worker
               stdout=subprocess.DEVNULL)
while True:
    try:
        grandchild = int(open(sys.argv[3]).read())
        break
    except (OSError, ValueError):
        time.sleep(0.1)
print(worker.pid, grandchild, flush=True)
worker.wait()
"""
_WORKER = """
import sys, time
from pathlib import Path
from captrack.pipeline import stage_job
from captrack.pipeline.jobs import StageJob
from captrack.processes import spawn

def launch(args):  # a stage that starts its own program (as a multi-rank stage starts torchrun), then waits
    child = spawn(["sleep", "300"])
    Path(args["pid"] + ".tmp").write_text(str(child.pid))
    Path(args["pid"] + ".tmp").rename(args["pid"])
    child.wait()

stage_job.JOB_KINDS.add("launch", launch)
spec = StageJob("launch", "s", "s", {"pid": sys.argv[2]}).write(Path(sys.argv[1]))
stage_job._main([str(spec)])  # what `python -m captrack.pipeline.stage_job SPEC` runs
"""


def test_a_stage_worker_and_the_program_it_started_die_when_the_run_is_killed(tmp_path: Path) -> None:
    """kill -9 of `captrack run`: its worker dies, and so does what the worker started (no Python of ours in it)."""
    parent, (worker, grandchild) = _start(_WORKER_PARENT, _WORKER, str(tmp_path / "s.json"), str(tmp_path / "pid"))
    assert _alive(worker) and _alive(grandchild)
    assert _kill_parent_and_watch(parent, [worker, grandchild]) == [], "a child outlived the killed run"


def test_one_worker_per_usable_core_unless_told() -> None:
    assert worker_count(7, 2, env={}) == 2
    assert worker_count(7, 16, env={"CAPTRACK_WORKERS": "3"}) == 3
    assert worker_count(2, 16, env={"CAPTRACK_WORKERS": "3"}) == 2
