"""The ``slurm`` executor: each stage job is one Slurm batch job, submitted through submitit.

An experiment chooses it with an ``executor:`` block (or ``captrack run --executor slurm``)::

    executor:
      name: slurm
      partition: gpu            # where the jobs run; the cluster's default partition when left out
      account: my-lab           # account, qos, constraint: passed to sbatch as they are
      qos: normal
      time: "04:00:00"          # the wall-time limit of each job: minutes or [D-]HH:MM:SS (default 24 hours)
      gpus: 1                   # GPUs per job (default: what the job's placement needs, 0 on CPU)
      cpus: 8                   # CPUs per job (default: the job's threads x ranks)
      mem_gb: 64                # memory per job (default: the cluster's)
      constraint: a100
      sbatch: ["--exclusive", "--reservation=eval"]      # more #SBATCH lines
      setup: ["module load cuda/12.4", "source ~/venvs/captrack/bin/activate"]   # run before the job
      python: python            # how the nodes start Python (default: this interpreter's path)

Each job runs ``python -m captrack.pipeline.stage_job SPEC`` (torchrun over the job's ranks for a
multi-rank job) on the node Slurm gives it; the work folder must be on a file system the nodes share.
submitit writes each job's log to ``<workdir>/slurm/<jobid>_0_log.out`` (stdout and stderr, appended
across requeues). A job requeued (preemption, ``scontrol requeue``) runs its spec again and its
evaluation resumes from lm-eval's request cache. Job states come from Slurm itself
(captrack.pipeline.executors.slurm_queue), polled every ``poll_s`` seconds (default 5).
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.errors import InputError
from captrack.pipeline.executors import Executor, JobRecord, JobState, JobStatus, executor
from captrack.pipeline.executors.slurm_queue import (
    SlurmState,
    cancel_jobs,
    job_states,
    latest_progress,
    live_job_ids,
    log_tail,
    offers_gpus,
    require_slurm,
)
from captrack.pipeline.jobs import StageJob, WorkerReport, rank_command, worker_command
from captrack.processes import LIFELINE_ENV, PARENT_ENV

__all__ = ["SlurmExecutor", "run_in_job", "sbatch_parameters"]

DEFAULT_MINUTES = 24 * 60
"""Each job's wall-time limit when the experiment names none (submitit's own default is 5 minutes)."""
_GONE_AFTER_S = 60.0
"""A job Slurm knows nothing of this long after its submission is gone (its record was purged, or it never ran)."""


_SLURM_TIME = re.compile(r"(?:(?P<days>\d{1,4})-(?P<dh>\d{1,2})(?::(?P<dm>\d{1,2})(?::(?P<ds>\d{1,2}))?)?"
                         r"|(?P<h>\d{1,6}):(?P<m>\d{1,2}):(?P<s>\d{1,2}))")
"""Slurm's time forms beyond plain minutes: days-hours[:minutes[:seconds]] and hours:minutes:seconds."""
MAX_MINUTES = 366 * 1440
"""The longest wall-time limit taken (a year; beyond that it is a typo)."""


def _minutes(value: Any, where: str) -> int:
    """A wall-time limit in minutes: a whole number of minutes, or Slurm's ``D-HH[:MM[:SS]]`` / ``HH:MM:SS`` text.

    Minutes and seconds must be under 60 and hours under 24 after days (``25:99`` is refused, as sbatch would). The
    two-part ``A:B`` is refused as ambiguous (Slurm reads minutes:seconds; ``04:00`` is often meant as four hours).

    Raises:
        InputError: anything else, naming `where`.
    """
    hint = "give minutes (e.g. 240) or [D-]HH:MM:SS (e.g. time: \"04:00:00\")"
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip()) if len(value.strip()) < 10 else MAX_MINUTES + 1
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 < value <= MAX_MINUTES:
            raise InputError(f"{where}: executor time {value!r} is not a wall-time limit in minutes between 1 and "
                             f"{MAX_MINUTES}; {hint}")
        return value
    match = _SLURM_TIME.fullmatch(value.strip()) if isinstance(value, str) else None
    if not match:
        said = " (Slurm reads A:B as minutes:seconds)" if isinstance(value, str) and re.fullmatch(r"\s*\d+:\d+\s*", value) else ""
        raise InputError(f"{where}: executor time {value!r} is neither minutes nor [D-]HH:MM:SS{said}; {hint}")
    days, hours = int(match["days"] or 0), int(match["dh"] or match["h"] or 0)
    minutes, seconds = int(match["dm"] or match["m"] or 0), int(match["ds"] or match["s"] or 0)
    if minutes >= 60 or seconds >= 60 or (match["days"] is not None and hours >= 24):
        raise InputError(f"{where}: executor time {value!r} is no Slurm time (minutes and seconds under 60, hours under "
                         f"24 after days); {hint}")
    total = days * 1440 + hours * 60 + minutes + (1 if seconds else 0)
    if not 0 < total <= MAX_MINUTES:
        raise InputError(f"{where}: executor time {value!r} is not between 1 minute and {MAX_MINUTES // 1440} days; {hint}")
    return total


def _field(value: Any, key: str, where: str) -> str:
    """A partition, account, qos or constraint as one line of text: a control character (a newline would end the
    ``#SBATCH`` line and run the rest as a shell line of the batch script) is refused.

    Raises:
        InputError: text holding a character that is not printable, or a value that is no text or number.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{where}: executor {key} must be text (a Slurm {key} name), not {value!r}")
    text = str(value)
    if not text.strip() or not text.isprintable():
        raise InputError(f"{where}: executor {key} {text!r} holds a line break, a control character or nothing; "
                         f"give one Slurm {key} name on one line")
    return text


def _number(value: Any, key: str, what: str, where: str) -> float:
    """A finite positive number (`value` of `key`); inf, nan, 0, a negative, a bool or text is refused."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: executor {key} must be a positive number of {what}, not {value!r}")
    return value


def _lines(value: Any, key: str, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"{where}: executor {key} must be a list of text lines, not {value!r}")
    return [v.strip() for v in value]


def _sbatch_lines(lines: list[str], where: str) -> dict[str, Any]:
    """Extra ``#SBATCH`` lines as submitit's additional parameters (``--exclusive`` -> {"exclusive": True})."""
    extra: dict[str, Any] = {}
    for line in lines:
        text = line.removeprefix("#SBATCH").strip()
        match = re.fullmatch(r"--([A-Za-z][\w-]*)(?:[= ](.+))?", text)
        if not match:
            raise InputError(f"{where}: executor sbatch line {line!r} is not an sbatch option (e.g. \"--exclusive\", "
                             "\"--reservation=eval\")")
        extra[match.group(1)] = match.group(2).strip() if match.group(2) else True
    return extra


def sbatch_parameters(options: Mapping[str, Any], job: StageJob, where: str = "the experiment") -> dict[str, Any]:
    """submitit's parameters for one job from the ``executor:`` options and what the job needs.

    Raises:
        InputError: a value that cannot be used (a time that is no time, an sbatch line that is no option).
    """
    gpus = options.get("gpus", job.needs.gpus)
    cpus = options.get("cpus", max(1, job.needs.threads) * max(1, job.needs.ranks))
    for key, value in (("gpus", gpus), ("cpus", cpus)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"{where}: executor {key} must be a whole number, not {value!r}")
    params: dict[str, Any] = {"job_name": f"captrack-{job.name}", "time": _minutes(options.get("time", DEFAULT_MINUTES), where),
                              "cpus_per_task": max(1, cpus), "stderr_to_stdout": True,
                              "setup": _lines(options.get("setup"), "setup", where) or None}
    if gpus:
        params["gpus_per_node"] = gpus
    for key in ("partition", "account", "qos", "constraint"):
        if options.get(key) is not None:
            params[key] = _field(options[key], key, where)
    if options.get("mem_gb") is not None:
        params["mem_gb"] = _number(options["mem_gb"], "mem_gb", "GB", where)
    extra = _sbatch_lines(_lines(options.get("sbatch"), "sbatch", where), where)
    if extra:
        params["additional_parameters"] = extra
    return params


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_in_job(spec: str, ranks: int, python: str) -> None:
    """The function each Slurm job runs (pickled by submitit): the stage job's worker, over its ranks.

    Raises:
        RuntimeError: the worker exited non-zero (submitit then records the job's error and Slurm FAILED).
    """
    env = {k: v for k, v in os.environ.items() if k not in (PARENT_ENV, LIFELINE_ENV)}  # the driver's, not ours
    threads = max(1, int(env.get("SLURM_CPUS_PER_TASK", "1")) // max(1, ranks))
    env.update({"CAPTRACK_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)})
    argv = worker_command(Path(spec), python) if ranks <= 1 else rank_command(Path(spec), ranks, _free_port(), python)
    print(f"captrack: Slurm job {env.get('SLURM_JOB_ID', '?')} (restart {env.get('SLURM_RESTART_COUNT', '0')}) on "
          f"{socket.gethostname()}: {shlex.join(argv)}", flush=True)
    code = subprocess.run(argv, env=env, check=False).returncode
    if code != 0:
        raise RuntimeError(f"the stage job's worker exited with status {code}")


@dataclass
class _Tracked:
    job: str
    """The StageJob id."""
    slurm_id: str
    spec: Path
    log: Path
    since: float
    last: JobStatus


@executor("slurm")
class SlurmExecutor(Executor):
    """Stage jobs as Slurm batch jobs (see the module docstring)."""

    poll_every_s = 1.0
    can_detach = True
    options_allowed = ("partition", "account", "qos", "time", "gpus", "cpus", "mem_gb", "constraint", "sbatch", "setup",
                       "python", "poll_s")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.folder = self.work.root / "slurm"
        self.python = str(self.options.get("python") or sys.executable)
        self.poll_s = float(self.options.get("poll_s", 5.0))
        self._tracked: dict[str, _Tracked] = {}
        self._polled = 0.0
        self._gpus_here: bool | None = None

    @classmethod
    def check_options(cls, options: Mapping[str, Any], where: str) -> None:
        """Unknown keys (close ones named) and values that cannot be used are refused before any work."""
        super().check_options(options, where)
        sbatch_parameters(options, StageJob("evaluate", "check", "check", {}), where)
        _number(options.get("poll_s", 5.0), "poll_s", "seconds", where)

    def describe(self) -> str:
        """Where the jobs go and where their logs are."""
        shown = {k: v for k, v in self.options.items() if k in ("partition", "account", "qos", "time", "gpus", "cpus")}
        where = ", ".join(f"{k} {v}" for k, v in shown.items()) or "the cluster's defaults"
        return f"slurm ({where}); job logs in {self.folder}"

    def _log(self, slurm_id: str) -> Path:
        from submitit.core.utils import JobPaths

        return Path(JobPaths(self.folder, job_id=slurm_id, task_id=0).stdout)

    def _cpu_only(self, options: Mapping[str, Any], job: StageJob) -> Mapping[str, Any]:
        """`options`, with ``gpus: 0`` when they name no GPUs, the job would take its placement's, and the partition
        has none (a CPU-only cluster: said once); a ``gpus:`` of the experiment is always kept."""
        if "gpus" in options or not job.needs.gpus:
            return options
        if self._gpus_here is None:
            self._gpus_here = offers_gpus(options.get("partition"))
            if not self._gpus_here:
                partition = options.get("partition") or "the default partition"
                self.log(f"{partition} offers no GPUs (sinfo): the jobs run on CPUs (gpus: N in the executor: block "
                         "asks for GPUs anyway)")
        return options if self._gpus_here else {**options, "gpus": 0}

    def submit(self, job: StageJob, spec: Path) -> JobStatus:
        """Submit `job` as one Slurm batch job (sbatch through submitit); its first status is QUEUED."""
        import submitit

        require_slurm()
        sbatch = submitit.SlurmExecutor(folder=self.folder, python=shlex.quote(self.python))
        sbatch.update_parameters(**sbatch_parameters(self._cpu_only(self.options, job), job))
        try:
            submitted = sbatch.submit(run_in_job, str(spec), job.needs.ranks, self.python)
        except submitit.core.utils.FailedJobError as exc:
            said = " ".join(str(exc).split())[:400]
            raise InputError(f"executor slurm: sbatch refused the job of {job.title!r}: {said}; check the experiment's "
                             "executor: block (partition, account, gpus: 0 on a cluster without GPUs, ...)") from exc
        status = JobStatus(job.id, JobState.QUEUED, str(submitted.job_id), log=str(self._log(submitted.job_id)))
        self._tracked[job.id] = _Tracked(job.id, status.job_id, spec, self._log(status.job_id), time.time(), status)
        self.log(f"submitted {job.title} as Slurm job {status.job_id} (log: {status.log})")
        return status

    def _status(self, tracked: _Tracked, found: SlurmState | None) -> JobStatus:
        """The job's status from Slurm's state (a job Slurm lost sight of for a minute is FAILED, said so)."""
        common = {"job": tracked.job, "job_id": tracked.slurm_id, "log": str(tracked.log)}
        if found is None:
            if time.time() - tracked.since < _GONE_AFTER_S:
                return tracked.last
            return JobStatus(state=JobState.FAILED, error=f"Slurm job {tracked.slurm_id} is unknown to Slurm (squeue, sacct "
                             f"and the job completion log); last lines of {tracked.log}:\n{log_tail(tracked.log)}", **common)
        state, report = found.captrack_state, None
        if state is JobState.DONE:  # DONE: exit 0 and the worker's report written
            report = WorkerReport.read(tracked.spec)
            state = JobState.FAILED if report is None or self._raised(tracked.slurm_id) else state
        error = ""
        if state in (JobState.FAILED, JobState.CANCELLED):
            code = f", exit code {found.exit_code}" if found.exit_code else ""
            missing = "" if found.captrack_state is not JobState.DONE else " but its worker wrote no report"
            error = (f"Slurm job {tracked.slurm_id} {found.state}{code}{missing}; last lines of {tracked.log}:\n"
                     f"{log_tail(tracked.log)}")
        return JobStatus(state=state, host=report.host if report else found.node,
                         gpus=(report.cuda_visible_devices or "") if report else "",
                         progress=latest_progress(tracked.log), error=error, **common)

    def _raised(self, slurm_id: str) -> bool:
        """Whether submitit recorded an error as the job's outcome (Slurm says COMPLETED only when it exited 0)."""
        from submitit.core.utils import JobPaths, pickle_load

        result = Path(JobPaths(self.folder, job_id=slurm_id, task_id=0).result_pickle)
        try:
            outcome = pickle_load(result) if result.is_file() else None
        except Exception:
            return False
        return isinstance(outcome, tuple) and bool(outcome) and outcome[0] == "error"

    def poll(self) -> list[JobStatus]:
        """Every tracked job's status (Slurm asked at most every poll_s seconds); finished ones reported once."""
        if not self._tracked:
            return []
        if time.monotonic() - self._polled < self.poll_s:
            return [t.last for t in self._tracked.values()]
        self._polled = time.monotonic()
        found = job_states(t.slurm_id for t in self._tracked.values())
        statuses = []
        for tracked in list(self._tracked.values()):
            status = tracked.last = self._status(tracked, found.get(tracked.slurm_id))
            statuses.append(status)
            if status.state.finished:
                del self._tracked[tracked.job]
        return statuses

    def cancel(self, job: str) -> None:
        """``scancel`` the job's Slurm job (its stage then ends CANCELLED at the next poll)."""
        if job in self._tracked:
            cancel_jobs([self._tracked[job].slurm_id])

    def attach(self, record: JobRecord) -> JobStatus | None:
        """Follow a job an earlier driver submitted; None when Slurm knows nothing of it (submit it again)."""
        if record.executor != self.name or not record.job_id:
            return None
        found = job_states([record.job_id]).get(record.job_id)
        if found is None:
            return None
        log = Path(record.log) if record.log else self._log(record.job_id)
        first = JobStatus(record.job, found.captrack_state, record.job_id, log=str(log))
        tracked = _Tracked(record.job, record.job_id, self.work.job_spec(record.job), log, time.time(), first)
        status = tracked.last = self._status(tracked, found)
        self._tracked[record.job] = tracked  # reported by the next poll, finished or not
        self.log(f"re-attached to Slurm job {record.job_id} ({found.state}) of job {record.job}")
        return status

    def close(self, cancel: bool) -> None:
        """With `cancel`, scancel every tracked job and wait (up to a minute) until squeue no longer lists them."""
        ids = [t.slurm_id for t in self._tracked.values()]
        self._tracked.clear()
        if not ids:
            return
        if not cancel:  # detached: the jobs run on
            self.log(f"detached: Slurm job(s) {', '.join(ids)} queued or running; watch them with `squeue -j "
                     f"{','.join(ids)}` and their logs in {self.folder}; the same `captrack run` again re-attaches to "
                     "them, submits what could not start yet and finishes (ingest, compare, leaderboard)")
            return
        cancel_jobs(ids)
        self.log(f"cancelled Slurm job(s) {', '.join(ids)}")
        deadline = time.monotonic() + 60
        while live_job_ids(ids) and time.monotonic() < deadline:
            time.sleep(1)
