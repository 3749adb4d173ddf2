"""How `captrack run` runs a batch of side-by-side stages (trainings, evaluations): here, or as jobs of its executor.

On a CPU node with the ``local`` executor nothing changes from one process per usable core: a batch that
gets one worker runs here, one stage after another, with every free core as torch threads; a larger one
runs in that many worker processes, the free cores shared between them. A multi-rank captrack-ds
evaluation always runs as a job (torchrun over its ranks). On a node with GPUs, and with any other
executor (``slurm``), every stage of the batch is a job (captrack.pipeline.dispatch).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from captrack.pipeline.cpu import apply_thread_plan, bf16_features, plan_threads
from captrack.pipeline.dtype_choice import uses_bf16
from captrack.pipeline.jobs import Placement
from captrack.pipeline.stage import Stage
from captrack.processes import worker_count
from captrack.report.escape import console_text

if TYPE_CHECKING:
    from rich.console import Console

    from captrack.pipeline.executors import Executor
    from captrack.pipeline.experiment import Experiment

__all__ = ["Runs", "check_executor", "check_placements", "run_batch", "run_here"]

Finish = Callable[[Stage, float, Placement | None, float], None]
"""A stage ended: its run time (s, from when it started running), where it ran, and how long it was queued (s)."""


@dataclass(frozen=True)
class Runs:
    """How this run runs its jobs: ``--executor`` (None: the experiment's ``executor:``, else local) and ``--detach``."""

    executor: str | None = None
    detach: bool = False


def _executor(experiment: Experiment, runs: Runs, console: Console) -> Executor:
    from captrack.pipeline.executors import make_executor

    return make_executor(experiment.executor, runs.executor, experiment.work, str(experiment.source),
                         log=lambda line: console.print(line, markup=False, highlight=False))


def check_executor(experiment: Experiment, runs: Runs) -> None:
    """Refuse an unknown executor or option (UnknownNameError naming the close ones), a value it cannot use, or
    ``--detach`` where its jobs end with the run, before any work.

    Raises:
        UnknownNameError / InputError: with what to do.
    """
    from captrack.errors import InputError
    from captrack.pipeline.executors import EXECUTORS

    block = dict(experiment.executor)
    named = str(block.pop("name", "local"))
    name = runs.executor or named
    cls = EXECUTORS.get(name)
    cls.check_options(block if name == named else {}, str(experiment.source))
    if runs.detach and not cls.can_detach:
        raise InputError(f"{experiment.source}: --detach needs an executor whose jobs run on without `captrack run` "
                         f"(slurm); the {name} executor's workers end with the run, so nothing was started: run without "
                         "--detach, or choose executor: {name: slurm} (or --executor slurm)")


def check_placements(experiment: Experiment, stages: list[Stage], runs: Runs, console: Console) -> None:
    """Refuse, before any work (a dry run included), the stages whose jobs the run's executor can never place (more
    GPUs, or more planned memory per GPU, than the node has); say what the evaluations' planned memory is sized for.

    Raises:
        InputError: naming each such stage, its need and what the node has; nothing was run.
    """
    from captrack.errors import InputError
    from captrack.pipeline.job_stages import plans_gpu_memory, request_length

    jobs = [(stage, stage.job(1)) for stage in stages if stage.job is not None and not stage.done()]
    if not jobs:
        return
    executor = _executor(experiment, runs, console)
    planned = [job for _, job in jobs if job.needs.gpu_memory] if plans_gpu_memory(experiment) else []
    for note in sorted({request_length(job.args["spec"]).why for job in planned}):
        console.print(f"[dim]planned memory per GPU: {console_text(note)}[/]", highlight=False)
    refused = [f"{stage.title} {why}" for stage, job in jobs if (why := executor.refusal(job))]
    if refused:
        raise InputError(f"{experiment.source}: {len(refused)} stage(s) cannot run on {executor.describe()}: "
                         f"{'; '.join(refused)}; nothing was run")


def run_here(stage: Stage, console: Console, finish: Finish, bf16: bool = False) -> None:
    """Run one stage in this process with torch threads from the free cores (`bf16`: it computes in bfloat16)."""
    threads = plan_threads()
    apply_thread_plan(threads)
    features = console_text(bf16_features(uses_bf16=bf16))
    console.print(f"[dim]{threads.threads} torch thread(s): {threads.reason}; {features}[/]")
    start = time.perf_counter()
    stage.action()
    finish(stage, time.perf_counter() - start, None, 0.0)


def run_batch(experiment: Experiment, batch: list[Stage], console: Console, finish: Finish, runs: Runs) -> bool:
    """Run queued side-by-side stages (see the module docstring); False when the run detached with jobs out.

    Raises:
        InputError: stages failed (each named; the stages that did not need them ran).
    """
    from captrack.pipeline.dispatch import run_jobs
    from captrack.pipeline.executors.local import LocalExecutor

    if not batch:
        return True
    if all(s.job is None for s in batch):  # stages of a backend that is no job: here, in order
        _one_by_one(experiment, batch, console, finish, None)
        return True
    executor = _executor(experiment, runs, console)
    threads = plan_threads()
    explicit = math.isnan(threads.load)  # CAPTRACK_THREADS / OMP_NUM_THREADS: never more threads in all than that
    workers = worker_count(len(batch), threads.threads if explicit else threads.usable_cores)
    jobs = [s for s in batch if s.job is not None]
    if isinstance(executor, LocalExecutor) and not executor.gpus:
        if "workers" not in executor.options:
            executor.slots = workers
        if workers < 2 or len(jobs) < len(batch):
            _one_by_one(experiment, batch, console, finish, executor)
            return True
        console.print(f"[dim]{threads.reason}; {console_text(bf16_features(uses_bf16=uses_bf16(experiment)))}[/]")
        return run_jobs(experiment.work, batch, executor, max(1, threads.threads // workers), console, finish, runs.detach)
    if isinstance(executor, LocalExecutor):
        per_job = max(1, threads.threads // max(1, min(len(batch), len(executor.gpus))))
    else:
        per_job = threads.threads
    here = [s for s in batch if s.job is None]
    if here:  # stages of a backend that is no job (none today): before the jobs, in order
        _one_by_one(experiment, here, console, finish, executor)
    return run_jobs(experiment.work, jobs, executor, per_job, console, finish, runs.detach)


def _one_by_one(experiment: Experiment, batch: list[Stage], console: Console, finish: Finish,
                executor: Executor | None) -> None:
    """The batch here, one stage after another (a multi-rank job still through the executor, alone)."""
    from captrack.pipeline.dispatch import run_jobs

    for stage in batch:
        if stage.done():  # queued behind a stage it needs, which left its inputs as they were
            console.print(f"[dim]{console_text(stage.title)}: unchanged, reusing[/]")
            continue
        if executor is not None and stage.job is not None and stage.job(1).needs.ranks > 1:
            run_jobs(experiment.work, [stage], executor, max(1, plan_threads().threads // stage.job(1).needs.ranks),
                     console, finish)
            continue
        console.rule(console_text(stage.title))
        run_here(stage, console, finish, stage.job is not None and uses_bf16(experiment))
