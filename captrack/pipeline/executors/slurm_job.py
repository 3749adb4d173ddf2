"""What runs inside a Slurm job of the slurm executor: the stage job's worker, and the job's answer to its pre-limit signal.

submitit pickles :data:`run_in_job` (a :class:`StageRun`) with the job's spec path; in the job it starts the worker
(``python -m captrack.pipeline.stage_job SPEC``, torchrun over its ranks) and waits. Each start is noted beside the
spec (:func:`captrack.pipeline.jobs.note_attempt`, with ``SLURM_RESTART_COUNT``), so the run's record shows every
restart. Before the time limit, or when the job is preempted, Slurm sends the executor block's ``signal:`` (USR1 by
default, 120 s ahead) to the job's step; submitit's handler for it (``SUBMITIT_PREEMPT_SIGNAL``, set by the batch
script) calls :meth:`StageRun.checkpoint`, which stops the worker (every request it finished is already in lm-eval's
request cache: each answer is committed as it comes) and hands submitit the same call again; submitit then runs
``scontrol requeue`` on the job (an array task alone). The requeued job runs the spec again and its evaluation
reads the finished requests from the cache instead of computing them. submitit requeues a timed-out job at most three
times, and counts a signal as a time-out once the job has run min(80% of its limit, its limit less 10 minutes): under a
10-minute limit every pre-limit signal counts, so such a job gets four attempts in all; a preempted job (signalled
earlier) is requeued without that count.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from captrack.pipeline.interpreters import foreign_env
from captrack.pipeline.jobs import note_attempt, rank_command, worker_command
from captrack.processes import LIFELINE_ENV, PARENT_ENV

__all__ = ["StageRun", "run_in_job"]

_STOP_WAIT_S = 30.0
"""How long a stopped worker may take to end (SIGTERM) before it is killed."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ignore_preempt_signal() -> None:
    """In the worker (before exec): ignore the pre-limit signal Slurm sends the whole step; the job's own handler
    stops the worker once it has decided to requeue."""
    name = os.environ.get("SUBMITIT_PREEMPT_SIGNAL", "")
    if name in ("USR1", "USR2"):
        signal.signal(getattr(signal, f"SIG{name}"), signal.SIG_IGN)


def _ended(pid: int, timeout: float) -> bool:
    """Whether child `pid` has ended, waiting up to `timeout` seconds, without reaping it: the handler runs inside
    ``Popen.wait``, which holds the Popen's wait lock (its own ``wait`` would block for good) and reaps it after."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:  # already reaped
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


class StageRun:
    """The callable each Slurm job runs: the stage job's worker over its ranks; checkpointable (see the module docstring)."""

    def __init__(self) -> None:
        self._worker: subprocess.Popen[bytes] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {}  # a running worker is this process's, never pickled

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._worker = None

    def __call__(self, spec: str, ranks: int, python: str) -> None:
        """Run the worker of the job in `spec` with `ranks` ranks started by `python`.

        Raises:
            RuntimeError: the worker exited non-zero (submitit then records the job's error and Slurm FAILED).
        """
        env = {k: v for k, v in os.environ.items() if k not in (PARENT_ENV, LIFELINE_ENV)}  # the driver's, not ours
        env = foreign_env(env, python)  # another interpreter (vLLM's environment): not this environment's PYTHONPATH
        threads = max(1, int(env.get("SLURM_CPUS_PER_TASK", "1")) // max(1, ranks))
        env.update({"CAPTRACK_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)})
        argv = worker_command(Path(spec), python) if ranks <= 1 else rank_command(Path(spec), ranks, _free_port(), python)
        restart = int(env.get("SLURM_RESTART_COUNT", "0") or 0)
        job_id = env.get("SLURM_ARRAY_JOB_ID", "")
        job_id = f"{job_id}_{env.get('SLURM_ARRAY_TASK_ID', '')}" if job_id else env.get("SLURM_JOB_ID", "?")
        note_attempt(Path(spec), restart, job_id, time.time())
        print(f"captrack: Slurm job {job_id} (restart {restart}) on {socket.gethostname()}: {shlex.join(argv)}", flush=True)
        self._worker = subprocess.Popen(argv, env=env, preexec_fn=_ignore_preempt_signal)
        code = self._worker.wait()
        if code != 0:
            raise RuntimeError(f"the stage job's worker exited with status {code}")

    def checkpoint(self, spec: str, ranks: int, python: str) -> Any:
        """The pre-limit signal came: stop the worker (its finished requests stay in the request cache) and return the
        same call, which submitit pickles before it requeues the job."""
        from submitit.core.utils import DelayedSubmission

        worker = self._worker
        if worker is not None and not _ended(worker.pid, 0):
            print(f"captrack: the pre-limit signal came: stopping the worker (PID {worker.pid}) and requeueing; the "
                  "requeued job reads every finished request from the request cache", flush=True)
            worker.terminate()
            if not _ended(worker.pid, _STOP_WAIT_S):
                worker.kill()
                _ended(worker.pid, _STOP_WAIT_S)
        return DelayedSubmission(StageRun(), spec, ranks, python)


run_in_job = StageRun()
"""What submitit runs in each job: ``run_in_job(spec, ranks, python)``."""
