"""``captrack run --status EXP``: every stage of an experiment, its state, and where it ran or runs.

Read from the work folder alone (markers, the jobs' records and reports): nothing runs, nothing is
submitted. A stage is ``done`` (its marker matches its inputs), ``changed`` (it ran, but with other
inputs: it runs again), ``not run``, or, for a job handed to an executor and not finished, its last
recorded state (``queued``, ``running``), ``lost`` where that job has certainly ended (a local worker or the
`captrack run` that drove it is gone: no process runs it), ``stopped`` where its run was stopped (Ctrl-C) and
cancelled it, and, when it failed, ``failed``/``cancelled``; a job that started again (a Slurm requeue: preemption,
its pre-limit signal) says how often. For a job that ran,
the GPU-hours it cost (GPUs x wall time) and its planned memory per GPU (captrack.backends.memory_plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from captrack.pipeline.executors import JobRecord
from captrack.pipeline.jobs import WorkerReport, attempts

if TYPE_CHECKING:
    from rich.console import Console

    from captrack.pipeline.experiment import Experiment
    from captrack.pipeline.stage import Stage

__all__ = ["StageState", "print_status", "stage_states"]


@dataclass(frozen=True)
class StageState:
    """One stage as the work folder records it."""

    title: str
    state: str
    executor: str = ""
    job_id: str = ""
    host: str = ""
    gpus: str = ""
    gpu_hours: float | None = None
    planned_gb: float | None = None
    restarts: int = 0
    """How often its job started again (a Slurm requeue: preemption, its pre-limit signal), as last recorded."""


def _recorded_state(record: JobRecord) -> str:
    """The record's state, ``lost`` for a job recorded queued or running that its executor knows has ended (a local
    worker, or the `captrack run` that drove it, is gone)."""
    from captrack.errors import CaptrackError
    from captrack.pipeline.executors import EXECUTORS

    if record.state not in ("queued", "running"):
        return record.state
    try:
        out = EXECUTORS.get(record.executor).still_out(record)
    except CaptrackError:  # an executor this captrack does not know: the record as it is
        return record.state
    return record.state if out else "lost"


def _job_state(stage: Stage, experiment: Experiment, done: bool) -> StageState:
    """A job stage's state from its marker, record and report."""
    assert stage.job is not None
    job = stage.job(1)
    work = experiment.work
    record = JobRecord.read(work, job.id)
    report = WorkerReport.read(work.job_spec(job.id))
    placed = stage.placement() if done else None
    restarts = max((a.restart for a in attempts(work.job_spec(job.id))), default=record.restarts if record else 0)
    planned = job.needs.gpu_memory / 1e9 if job.needs.gpu_memory else None
    if placed is not None:
        gpus = str(placed.get("gpus", ""))
        hours = None
        if report is not None and report.job == job.id and gpus:
            hours = len(gpus.split(",")) * (report.ended - report.started) / 3600
        return StageState(stage.title, "done", str(placed.get("executor", "")), str(placed.get("job_id", "")),
                          str(placed.get("host", "")), gpus, hours, planned, restarts)
    if done:
        return StageState(stage.title, "done", planned_gb=planned)
    if record is not None:
        return StageState(stage.title, _recorded_state(record), record.executor, record.job_id, record.host, record.gpus,
                          planned_gb=planned, restarts=restarts)
    return StageState(stage.title, "changed" if stage.marker.is_file() else "not run", planned_gb=planned)


def stage_states(experiment: Experiment, console: Console) -> list[StageState]:
    """Every stage of `experiment` in run order, with its state (nothing runs)."""
    from captrack.pipeline.runner import plan

    states = []
    for stage in plan(experiment, console):
        done = stage.done()
        if stage.rerun_when_reused and done:
            stage.action()  # an alias resolved from its cache: later stages name the folder it resolved to
        if stage.job is not None:
            states.append(_job_state(stage, experiment, done))
        else:
            state = "done" if done else ("changed" if stage.marker.is_file() else "not run")
            states.append(StageState(stage.title, state, "here" if done else ""))
    return states


def print_status(experiment: Experiment, console: Console) -> None:
    """Print one line per stage: state, executor, job id, host, GPUs, GPU-hours, planned memory, title."""
    from rich.markup import escape

    states = stage_states(experiment, console)
    console.print(f"{'state':<10} {'executor':<9} {'job id':<12} {'host':<16} {'GPUs':<8} {'GPU h':>7} {'plan GB':>8}  stage",
                  highlight=False, markup=False)
    for s in states:
        hours = f"{s.gpu_hours:.3f}" if s.gpu_hours is not None else "-"
        planned = f"{s.planned_gb:.1f}" if s.planned_gb is not None else "-"
        color = {"done": "green", "failed": "red", "cancelled": "red", "lost": "red", "running": "cyan",
                 "queued": "cyan"}.get(s.state, "yellow")
        console.print(f"[{color}]{s.state:<10}[/] {escape(s.executor or '-'):<9} {escape(s.job_id or '-'):<12} "
                      f"{escape(s.host or '-'):<16} {escape(s.gpus or '-'):<8} {hours:>7} {planned:>8}  {escape(s.title)}"
                      f"{f' (restarted {s.restarts}x)' if s.restarts else ''}",
                      highlight=False)
    done = sum(s.state == "done" for s in states)
    hours_all = sum(s.gpu_hours or 0.0 for s in states)
    console.print(f"{done}/{len(states)} stage(s) done; {hours_all:.3f} GPU-hour(s) recorded", highlight=False, markup=False)
