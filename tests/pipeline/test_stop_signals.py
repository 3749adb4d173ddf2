"""Ctrl-C and SIGTERM stop a run even when they land inside a finalizer (captrack.processes.raise_if_stopped).

Python drops an exception raised while ``__del__`` runs ("Exception ignored in ..."): a KeyboardInterrupt from a
signal that arrives there is lost, and a driver waiting on its jobs would go on to the end and exit 0.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from captrack.pipeline.executors import JobRecord
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import plan
from captrack.processes import stop_signals_as_interrupt

DROPPED = """
import os, signal, sys
from captrack.processes import raise_if_stopped, stop_signals_as_interrupt

class SignalInFinalizer:
    def __del__(self):
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        for _ in range(100000):  # the handler runs here, inside the finalizer: its exception is dropped
            pass

with stop_signals_as_interrupt():
    try:
        SignalInFinalizer()
        print("went on", flush=True)
        raise_if_stopped()
        print("not raised again", flush=True)
    except KeyboardInterrupt as exc:
        print("raised again:", type(exc).__name__, flush=True)
with stop_signals_as_interrupt():
    raise_if_stopped()
    print("a new command starts clear", flush=True)
"""


@pytest.mark.parametrize(("name", "raised"), [("SIGINT", "KeyboardInterrupt"), ("SIGTERM", "Terminated")])
def test_a_stop_signal_dropped_by_a_finalizer_is_raised_again(name: str, raised: str) -> None:
    done = subprocess.run([sys.executable, "-c", DROPPED, name], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["went on", f"raised again: {raised}", "a new command starts clear"], \
        done.stdout + done.stderr
    assert "Exception ignored in" in done.stderr  # Python did drop it where it landed


def test_sigint_inherited_ignored_stays_ignored() -> None:
    """A shell's background job ignores Ctrl-C by convention; captrack does not undo that."""
    code = ("import signal\nfrom captrack.processes import stop_signals_as_interrupt\n"
            "with stop_signals_as_interrupt():\n    print(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    assert done.stdout.strip() == "True", done.stdout + done.stderr


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped interrupt, on purpose
def test_the_job_loop_stops_on_a_ctrl_c_a_finalizer_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run_jobs with a real local worker: a SIGINT landing in a finalizer during a poll still stops the run, and the
    job is recorded stopped (without the check the worker would run on, fail on its missing model, and the run
    would end with that error instead)."""
    from captrack.pipeline.dispatch import run_jobs
    from captrack.pipeline.executors.local import LocalExecutor

    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    (tmp_path / "exp.yaml").write_text(
        "name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 2\n"
        "base: {name: base, model_args: {pretrained: /nonexistent/captrack-test-model}}\n"
        "variants:\n  - {name: v, model_args: {pretrained: /nonexistent/captrack-test-model}, algorithm: SFT}\n")
    experiment = load_experiment(tmp_path / "exp.yaml")
    quiet = Console(file=io.StringIO())
    stage = next(s for s in plan(experiment, quiet) if s.title == "evaluate v (seed 0)")
    assert stage.job is not None
    record = JobRecord.path(experiment.work, stage.job(1).id)
    executor = LocalExecutor(experiment.work, {}, log=lambda _: None)
    poll = executor.poll
    fired: list[bool] = []

    class SignalInFinalizer:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100000):
                pass

    def poll_then_drop() -> list:
        statuses = poll()
        if not fired and record.is_file() and json.loads(record.read_text()).get("state") == "running":
            fired.append(True)
            SignalInFinalizer()  # made and dropped here: its finalizer runs at once and swallows the interrupt
        return statuses

    monkeypatch.setattr(executor, "poll", poll_then_drop)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # a background job inherits SIGINT ignored
    try:
        with stop_signals_as_interrupt(), pytest.raises(KeyboardInterrupt):
            run_jobs(experiment.work, [stage], executor, 1, quiet, lambda *_: None)
            time.sleep(30)  # not reached
    finally:
        signal.signal(signal.SIGINT, previous)
    assert fired, "the worker never ran"
    written = json.loads(record.read_text())
    assert written["state"] == "stopped", written


def test_after_the_command_no_stop_is_left_over() -> None:
    """A signal received inside one command does not stop code that runs after it (the next test, a second command)."""
    from captrack.processes import raise_if_stopped

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), stop_signals_as_interrupt():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)
    finally:
        signal.signal(signal.SIGINT, previous)
    raise_if_stopped()  # nothing left to raise
