"""The driver of a batch of stage jobs: hands ready jobs to an executor, follows them, records where each ran.

The stages of a batch (trainings, evaluations: captrack.pipeline.job_stages) may need each other (an
evaluation its variant's training). A stage whose needs are done is ready: its job is built, its spec
written to ``<workdir>/jobs/<id>.json``, and it is handed to the executor (the stages ready together in one
:meth:`~captrack.pipeline.executors.Executor.submit_all`: one array on slurm), or re-attached to when an earlier
driver's record of that very job (same id, same executor) says it is still known. Each state change is
recorded (``<id>.record.json``); a DONE job's stage gets its marker with its placement (executor, job id,
host, GPUs); a FAILED or CANCELLED job fails its stage, and the stages that need it, while independent
stages go on; the batch then raises naming each failure. Ctrl-C or an error cancels the jobs still queued
or running, unless the run was detached, and records them as ``stopped``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from captrack.errors import InputError
from captrack.pipeline.executors import Executor, JobRecord, JobState, JobStatus
from captrack.pipeline.jobs import Placement, StageJob, WorkerReport, forget_attempts
from captrack.pipeline.layout import WorkFolder
from captrack.pipeline.stage import Stage
from captrack.pipeline.workers import PROGRESS_EVERY_S, show_stage_warnings, slug
from captrack.processes import raise_if_stopped

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["STOPPED", "Batch", "run_jobs"]

STOPPED = "stopped"
"""The recorded state of a job the run cancelled when it was stopped (Ctrl-C, an error) before the job ended."""

Finish = Callable[[Stage, float, Placement | None, float], None]
"""A stage ended: its run time (s, from when it started running), where it ran, and how long it was queued (s)."""


@dataclass
class Batch:
    """One batch's bookkeeping: what waits, what was handed on, what ended."""

    waiting: list[Stage]
    pending: set[str]
    done: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    submitted: dict[str, tuple[Stage, StageJob, float]] = field(default_factory=dict)
    seen: dict[str, JobStatus] = field(default_factory=dict)
    running_since: dict[str, float] = field(default_factory=dict)
    """When each job was first seen running (perf_counter): its queue time ends there."""

    def queued_for(self, job: str, submitted: float) -> float:
        """Seconds `job` waited from its hand-on until it was first seen running (so far, while it waits)."""
        return self.running_since.get(job, time.perf_counter()) - submitted

    def ready(self) -> list[Stage]:
        """Waiting stages whose needs in this batch are done, costliest first."""
        found = [s for s in self.waiting if all(n in self.done or n not in self.pending for n in s.needs)]
        return sorted(found, key=lambda s: -s.cost)

    def blocked(self) -> list[Stage]:
        """Waiting stages that need a failed one (they cannot run in this run)."""
        return [s for s in self.waiting if any(n in self.failed for n in s.needs)]


def _attached(batch: Batch, stage: Stage, executor: Executor, work: WorkFolder, threads: int,
              console: Console) -> tuple[StageJob, Path] | None:
    """Re-attach to `stage`'s job when an earlier driver submitted the same job to this executor and it is still known;
    else its job and written spec, to submit (None when re-attached)."""
    assert stage.job is not None  # the runner dispatches job stages only
    job = stage.job(threads)
    spec = job.write(work.job_spec(job.id))
    batch.submitted[job.id] = (stage, job, time.perf_counter())
    record = JobRecord.read(work, job.id)
    if record is not None and record.executor == executor.name and record.state in ("queued", "running", "done"):
        status = executor.attach(record)
        if status is not None:
            console.print(f"[dim]{escape(stage.title)}: re-attached to {executor.name} job {escape(status.job_id)} "
                          f"({status.state.value})[/]")
            _record(batch, executor, work, status)
            return None
    WorkerReport.path(spec).unlink(missing_ok=True)  # an earlier run's report says nothing of this one
    forget_attempts(spec)
    return job, spec


def _hand_on(batch: Batch, stages: list[Stage], executor: Executor, work: WorkFolder, threads: int,
             console: Console) -> None:
    """Re-attach to each stage's job an earlier driver submitted, and submit the others together (one array on slurm)."""
    fresh = [pair for stage in stages if (pair := _attached(batch, stage, executor, work, threads, console))]
    if not fresh:
        return
    try:
        statuses = executor.submit_all(fresh)
    except BaseException:
        for job, _ in fresh:  # not submitted: nothing of it to follow or cancel
            batch.submitted.pop(job.id, None)
        raise
    for status in statuses:
        _record(batch, executor, work, status)


def _record(batch: Batch, executor: Executor, work: WorkFolder, status: JobStatus) -> None:
    if status.state is not JobState.QUEUED:
        batch.running_since.setdefault(status.job, time.perf_counter())
    before = batch.seen.get(status.job)
    batch.seen[status.job] = status  # before the write: a Ctrl-C right after it must find the job to record stopped
    if before is None or (before.state, before.job_id, before.host, before.restarts) != \
            (status.state, status.job_id, status.host, status.restarts):
        JobRecord.of(executor.name, status).write(work)


def _record_stopped(batch: Batch, executor: Executor, work: WorkFolder) -> None:
    """Ctrl-C or an error ended the run and its executor cancelled the jobs still out: their records say ``stopped``
    (what ``--status`` shows; the next run submits them again), never the ``running`` they were."""
    for job in batch.submitted:
        seen = batch.seen.get(job)
        record = JobRecord.of(executor.name, seen) if seen is not None else JobRecord.read(work, job)
        if record is not None and record.state != STOPPED:
            replace(record, state=STOPPED).write(work)


def _ended(batch: Batch, status: JobStatus, executor: Executor, work: WorkFolder, console: Console, finish: Finish) -> None:
    stage, job, started = batch.submitted.pop(status.job)
    if status.state is JobState.DONE:
        report = WorkerReport.read(work.job_spec(job.id))
        host = report.host if report is not None else status.host
        gpus = (report.cuda_visible_devices or "") if report is not None else status.gpus
        batch.done.add(stage.title)
        elapsed = time.perf_counter() - started
        ran = min(elapsed, max(0.0, report.ended - report.started)) if report is not None else \
            elapsed - batch.queued_for(status.job, started)
        finish(stage, ran, Placement(executor.name, status.job_id, host, gpus, report.python if report else ""),
               max(0.0, elapsed - ran))
        return
    job_id = f"{executor.name} job {status.job_id}" if status.job_id else f"{executor.name} job"
    batch.failed[stage.title] = f"stage {stage.title!r} failed ({job_id}, {status.state.value}): {status.error}"
    console.print(f"[red]{escape(stage.title)} failed[/] ({escape(job_id)}, {status.state.value}); the stages that do "
                  "not need it go on", highlight=False)


def _show_progress(batch: Batch, console: Console) -> None:
    for job, (stage, _, started) in batch.submitted.items():
        status = batch.seen.get(job)
        if status is None:
            continue
        where = f"{status.state.value}{' on ' + status.host if status.host and status.state is JobState.RUNNING else ''}"
        line = f": {status.progress}" if status.progress else ""
        queued = batch.queued_for(job, started)
        times = (f"queued {queued:.0f} s" if status.state is JobState.QUEUED else
                 f"{time.perf_counter() - started - queued:.0f} s" + (f" after {queued:.0f} s queued" if queued >= 1 else ""))
        console.print(f"[dim]{escape(stage.title)} ({times}, {escape(where)}){escape(line)}[/]", highlight=False)


def run_jobs(work: WorkFolder, stages: list[Stage], executor: Executor, threads: int, console: Console,
             finish: Finish, detach: bool = False) -> bool:
    """Run `stages` (each `needs` only stages in this list or done ones) as jobs of `executor`.

    Args:
        threads: CPU threads per rank each job gets.
        detach: return once every stage that can be handed on now has been (jobs left queued or running).

    Returns:
        True when every stage ended; False when detached with jobs still out.

    Raises:
        InputError: one or more stages failed (each named with its job id, state and log tail); the others ran.
    """
    batch = Batch(list(stages), {s.title for s in stages})
    console.print(f"[dim]{len(stages)} stage(s) as jobs: {escape(executor.describe())}; logs in {escape(str(work.logs))}[/]")
    shown, ended = time.perf_counter(), False
    try:
        while batch.waiting or batch.submitted:
            raise_if_stopped()  # a Ctrl-C or SIGTERM that landed in a finalizer and was dropped there
            ready = []
            for stage in batch.ready():
                batch.waiting.remove(stage)
                if stage.done():  # what it needed ran again and left its inputs as they were
                    console.print(f"[dim]{escape(stage.title)}: unchanged, reusing[/]")
                    batch.done.add(stage.title)
                    continue
                ready.append(stage)
            if ready:
                _hand_on(batch, ready, executor, work, threads, console)
            for stage in batch.blocked():
                batch.waiting.remove(stage)
                batch.failed[stage.title] = f"stage {stage.title!r} did not run: it needs a stage that failed"
            if detach and not batch.ready():
                break
            for status in executor.poll():
                if status.job not in batch.submitted:
                    continue
                _record(batch, executor, work, status)
                if status.state.finished:
                    _ended(batch, status, executor, work, console, finish)
            if batch.submitted and time.perf_counter() - shown >= PROGRESS_EVERY_S:
                _show_progress(batch, console)
                shown = time.perf_counter()
            if batch.submitted:
                time.sleep(executor.poll_every_s)
        ended = True
    finally:
        executor.close(cancel=not ended and not detach)
        if not ended and not detach:
            _record_stopped(batch, executor, work)
    logs = [work.log(slug(s.title)) for s in stages if work.log(slug(s.title)).is_file()]
    if logs:
        show_stage_warnings(logs, console)
    if batch.failed:
        raise InputError("\n".join(batch.failed.values()))
    return not batch.submitted
