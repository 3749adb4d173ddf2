"""The driver of a batch of stage jobs: hands ready jobs to an executor, follows them, records where each ran.

The stages of a batch (trainings, evaluations: captrack.pipeline.job_stages) may need each other (an
evaluation its variant's training). A stage whose needs are done is ready: its job is built, its spec
written to ``<workdir>/jobs/<id>.json``, and it is handed to the executor, or re-attached to when an earlier
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
from typing import TYPE_CHECKING

from rich.markup import escape

from captrack.errors import InputError
from captrack.pipeline.executors import Executor, JobRecord, JobState, JobStatus
from captrack.pipeline.jobs import Placement, StageJob, WorkerReport
from captrack.pipeline.layout import WorkFolder
from captrack.pipeline.stage import Stage
from captrack.pipeline.workers import PROGRESS_EVERY_S, show_stage_warnings, slug

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["STOPPED", "Batch", "run_jobs"]

STOPPED = "stopped"
"""The recorded state of a job the run cancelled when it was stopped (Ctrl-C, an error) before the job ended."""

Finish = Callable[[Stage, float, Placement | None], None]


@dataclass
class Batch:
    """One batch's bookkeeping: what waits, what was handed on, what ended."""

    waiting: list[Stage]
    pending: set[str]
    done: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)
    submitted: dict[str, tuple[Stage, StageJob, float]] = field(default_factory=dict)
    seen: dict[str, JobStatus] = field(default_factory=dict)

    def ready(self) -> list[Stage]:
        """Waiting stages whose needs in this batch are done, costliest first."""
        found = [s for s in self.waiting if all(n in self.done or n not in self.pending for n in s.needs)]
        return sorted(found, key=lambda s: -s.cost)

    def blocked(self) -> list[Stage]:
        """Waiting stages that need a failed one (they cannot run in this run)."""
        return [s for s in self.waiting if any(n in self.failed for n in s.needs)]


def _hand_on(batch: Batch, stage: Stage, executor: Executor, work: WorkFolder, threads: int, console: Console) -> None:
    """Submit `stage`'s job, or re-attach to the same job an earlier driver submitted to this executor."""
    assert stage.job is not None  # the runner dispatches job stages only
    job = stage.job(threads)
    spec = job.write(work.job_spec(job.id))
    record = JobRecord.read(work, job.id)
    status = None
    if record is not None and record.executor == executor.name and record.state in ("queued", "running", "done"):
        status = executor.attach(record)
        if status is not None:
            console.print(f"[dim]{escape(stage.title)}: re-attached to {executor.name} job {escape(status.job_id)} "
                          f"({status.state.value})[/]")
    if status is None:
        WorkerReport.path(spec).unlink(missing_ok=True)  # an earlier run's report says nothing of this one
        status = executor.submit(job, spec)
    batch.submitted[job.id] = (stage, job, time.perf_counter())
    _record(batch, executor, work, status)


def _record(batch: Batch, executor: Executor, work: WorkFolder, status: JobStatus) -> None:
    before = batch.seen.get(status.job)
    if before is None or (before.state, before.job_id, before.host) != (status.state, status.job_id, status.host):
        JobRecord.of(executor.name, status).write(work)
    batch.seen[status.job] = status


def _record_stopped(batch: Batch, executor: Executor, work: WorkFolder) -> None:
    """Ctrl-C or an error ended the run and its executor cancelled the jobs still out: their records say ``stopped``
    (what ``--status`` shows; the next run submits them again), never the ``running`` they were."""
    for job in batch.submitted:
        seen = batch.seen.get(job)
        if seen is not None:
            replace(JobRecord.of(executor.name, seen), state=STOPPED).write(work)


def _ended(batch: Batch, status: JobStatus, executor: Executor, work: WorkFolder, console: Console, finish: Finish) -> None:
    stage, job, started = batch.submitted.pop(status.job)
    if status.state is JobState.DONE:
        report = WorkerReport.read(work.job_spec(job.id))
        host = report.host if report is not None else status.host
        gpus = (report.cuda_visible_devices or "") if report is not None else status.gpus
        batch.done.add(stage.title)
        finish(stage, time.perf_counter() - started, Placement(executor.name, status.job_id, host, gpus))
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
        console.print(f"[dim]{escape(stage.title)} ({time.perf_counter() - started:.0f} s, {escape(where)}){escape(line)}[/]",
                      highlight=False)


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
            for stage in batch.ready():
                batch.waiting.remove(stage)
                if stage.done():  # what it needed ran again and left its inputs as they were
                    console.print(f"[dim]{escape(stage.title)}: unchanged, reusing[/]")
                    batch.done.add(stage.title)
                    continue
                _hand_on(batch, stage, executor, work, threads, console)
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
