"""The ``slurm`` executor: each stage job is one Slurm job (an array's task when several are ready together), via submitit.

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
      array_parallelism: 8      # an array's tasks running at once (--array=0-N%8; default: all)
      signal: USR1@120          # the pre-limit signal (default): the job requeues itself, resuming from its cache
      requeues: 3               # requeues on a time-out before a job fails (submitit's max_num_timeout; default 3)
      container: {image: /shared/captrack.sqsh, mounts: ["/shared:/shared"]}   # runtime: pyxis (default) | apptainer
      train: {partition: gpu, gpus: 1, time: "08:00:00"}      # a stage kind's own resources (train:, evaluate:)
      evaluate: {partition: eval, time: 60}
      python: python            # how the nodes start Python (default: this interpreter's path)
      poll_s: 5                 # how often Slurm is asked for the jobs' states (seconds)

Resources are read and checked by captrack.pipeline.executors.slurm_resources. Stages of one kind with the same
resources that are ready together (a sweep's evaluations) are submitted as one Slurm array (``--array=0-N%P``, P from
``array_parallelism``); each array task is still one stage job: its own id (``ARRAYID_TASK``), log, record, state,
re-attach and cancel. Each job runs ``python -m captrack.pipeline.stage_job SPEC`` (torchrun over the job's ranks for a
multi-rank job) on the node Slurm gives it (captrack.pipeline.executors.slurm_job); the work folder must be on a file
system the nodes share. submitit writes each job's log to ``<workdir>/slurm/<jobid>_0_log.out`` (stdout and stderr,
appended across requeues). A job requeued (its pre-limit signal, preemption, ``scontrol requeue``) runs its spec again,
its evaluation resuming from lm-eval's request cache; its record counts the restarts. Job states come from Slurm itself
(captrack.pipeline.executors.slurm_queue), polled every ``poll_s`` seconds (default 5).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.errors import InputError
from captrack.pipeline.executors import Executor, JobRecord, JobState, JobStatus, executor
from captrack.pipeline.executors.slurm_job import run_in_job
from captrack.pipeline.executors.slurm_queue import (
    SlurmState,
    cancel_jobs,
    job_states,
    latest_progress,
    live_job_ids,
    log_tail,
    offers_gpus,
    partition_gpus,
    require_slurm,
)
from captrack.pipeline.executors.slurm_resources import (
    check_block,
    launch_python,
    positive_number,
    resources_line,
    sbatch_parameters,
    stage_options,
)
from captrack.pipeline.jobs import StageJob, WorkerReport, attempts

__all__ = ["SlurmExecutor", "run_in_job", "sbatch_parameters"]

_GONE_AFTER_S = 60.0
"""A job Slurm knows nothing of this long after its submission is gone (its record was purged, or it never ran)."""


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
                       "container", "array_parallelism", "signal", "train", "evaluate", "python", "poll_s", "requeues")

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
        """Unknown keys (close ones named) and values that cannot be used, in every stage kind's resources, are refused
        before any work."""
        super().check_options(options, where)
        check_block(options, where)
        positive_number(options.get("poll_s", 5.0), "poll_s", "seconds", where)
        requeues = options.get("requeues", 3)
        if isinstance(requeues, bool) or not isinstance(requeues, int) or not 0 <= requeues <= 1000:
            raise InputError(f"{where}: executor requeues {requeues!r} is not a whole number from 0 to 1000 (how often a "
                             "job that reached its time limit is requeued before it fails; default 3)")
        python = options.get("python")
        if python is not None and (not isinstance(python, str) or not python.strip() or not python.isprintable()):
            raise InputError(f"{where}: executor python {python!r} is not one line naming how the nodes start Python")

    def describe(self) -> str:
        """Where the jobs go and where their logs are."""
        shown = {k: v for k, v in self.options.items() if k in ("partition", "account", "qos", "time", "gpus", "cpus",
                                                                 "array_parallelism")}
        shown.update({k: "{...}" for k in ("train", "evaluate") if k in self.options})
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

    def _options(self, job: StageJob) -> Mapping[str, Any]:
        """The resource options of `job`'s stage kind (the block's defaults, then its kind's sub-block)."""
        return self._cpu_only(stage_options(self.options, job.kind), job)

    def refusal(self, job: StageJob) -> str | None:
        """Say the job's resources, planned memory and GPU-hours at most (what ``--dry-run`` shows), and refuse more
        GPUs per task than a node of its partition has, where ``sinfo`` tells."""
        options = self._options(job)
        params = sbatch_parameters(options, job, "the experiment")
        self.log(f"{job.title}: slurm {resources_line(params, options, job.needs.gpu_memory)}")
        gpus = int(params.get("gpus_per_node", 0))
        most = partition_gpus(options.get("partition")) if gpus else None
        if most is not None and gpus > most:
            partition = options.get("partition") or "the default partition"
            return (f"asks {gpus} GPU(s) per task but a node of {partition} has at most {most} (sinfo): lower gpus: in "
                    f"the executor: block's {job.kind}: resources, or choose a partition with larger nodes")
        return None

    def submit(self, job: StageJob, spec: Path) -> JobStatus:
        """Submit `job` as one Slurm batch job (sbatch through submitit); its first status is QUEUED."""
        return self.submit_all([(job, spec)])[0]

    def submit_all(self, jobs: list[tuple[StageJob, Path]]) -> list[JobStatus]:
        """Submit `jobs`: those of one stage kind with the same resources as one Slurm array (a lone one as one job)."""
        require_slurm()
        groups: dict[str, list[tuple[StageJob, Path, dict[str, Any]]]] = {}
        for job, spec in jobs:
            options = self._options(job)
            params = sbatch_parameters(options, job, "the experiment")
            python = launch_python(options, self.python, int(params.get("gpus_per_node", 0)))
            inner = job.python or self.python  # what starts the worker: the job's own interpreter (vLLM's) or this one
            key = json.dumps([job.kind, python, inner, {k: v for k, v in params.items() if k != "job_name"}], sort_keys=True)
            groups.setdefault(key, []).append((job, spec, {**params, "python": python, "inner": inner}))
        statuses = {s.job: s for group in groups.values() for s in self._submit_group(group)}
        return [statuses[job.id] for job, _ in jobs]

    def _submit_group(self, group: list[tuple[StageJob, Path, dict[str, Any]]]) -> list[JobStatus]:
        """One sbatch for the group: an array of its jobs (``--array=0-N%P``) when it holds several."""
        import submitit

        params = dict(group[0][2])
        python = params.pop("python")
        inner = params.pop("inner")  # inside a container the job's own Python starts the worker
        if len(group) > 1:
            params["job_name"] = f"captrack-{group[0][0].kind}"
        sbatch = submitit.SlurmExecutor(folder=self.folder, python=python,
                                        max_num_timeout=int(self.options.get("requeues", 3)))
        sbatch.update_parameters(**params)
        try:
            with sbatch.batch():
                submitted = [sbatch.submit(run_in_job, str(spec), job.needs.ranks, inner) for job, spec, _ in group]
        except submitit.core.utils.FailedJobError as exc:
            said = " ".join(str(exc).split())[:400]
            titles = ", ".join(repr(job.title) for job, _, _ in group)
            raise InputError(f"executor slurm: sbatch refused the job of {titles}: {said}; check the experiment's "
                             "executor: block (partition, account, gpus: 0 on a cluster without GPUs, ...)") from exc
        statuses = []
        for (job, spec, _), one in zip(group, submitted, strict=True):
            log = self._log(str(one.job_id))
            status = JobStatus(job.id, JobState.QUEUED, str(one.job_id), log=str(log))
            self._tracked[job.id] = _Tracked(job.id, status.job_id, spec, log, time.time(), status)
            statuses.append(status)
            self.log(f"submitted {job.title} as Slurm job {status.job_id} (log: {status.log})")
        if len(group) > 1:
            cap = params.get("array_parallelism", len(group))
            self.log(f"{len(group)} {group[0][0].kind} job(s) as one Slurm array {str(submitted[0].job_id).split('_')[0]} "
                     f"(at most {min(cap, len(group))} at once)")
        return statuses

    def _status(self, tracked: _Tracked, found: SlurmState | None) -> JobStatus:
        """The job's status from Slurm's state (a job Slurm lost sight of for a minute is FAILED, said so)."""
        common: dict[str, Any] = {"job": tracked.job, "job_id": tracked.slurm_id, "log": str(tracked.log)}
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
        restarts = max((a.restart for a in attempts(tracked.spec)), default=0)
        return JobStatus(state=state, host=report.host if report else found.node,
                         gpus=(report.cuda_visible_devices or "") if report else "",
                         progress=latest_progress(tracked.log), error=error, restarts=restarts, **common)

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
