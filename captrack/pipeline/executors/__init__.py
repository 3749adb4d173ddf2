"""Executors: where the jobs of `captrack run` run (one registry; ``executor:`` in the experiment or ``--executor``).

The driver (captrack.pipeline.dispatch) keeps the order: it hands an executor each stage job whose
stages it needs are done, polls, and writes a stage's marker when its job is DONE. An executor only
places and runs jobs:

- :meth:`Executor.submit` takes a job whose spec is written (``<workdir>/jobs/<id>.json``) and queues
  or starts it; it returns the job's first :class:`JobStatus` (its executor job id included).
  :meth:`Executor.submit_all` takes the jobs ready at the same time (slurm: one array of them).
- :meth:`Executor.poll` returns the current status of every job submitted or attached and not yet
  reported finished; a job is reported DONE, FAILED or CANCELLED once, then forgotten.
- :meth:`Executor.cancel` cancels one job; :meth:`Executor.close` ends the run (``cancel=True`` on
  Ctrl-C or a failure: every queued or running job is cancelled; False: a detached run leaves them).
- :meth:`Executor.refusal` says why a job can never run there (the local node has too few GPUs, or none holding
  its planned memory); ``captrack run`` (``--dry-run`` included) refuses such a stage before any work.
- :attr:`Executor.can_detach`: whether its jobs outlive the driver (slurm); ``--detach`` is refused otherwise.
- :meth:`Executor.still_out` says, for ``captrack run --status``, whether a job recorded as queued or running
  may still be (a local worker whose process is gone is not).
- :meth:`Executor.attach` re-attaches to a job recorded by an earlier driver (its :class:`JobRecord`,
  ``<workdir>/jobs/<id>.record.json``): its status when the job is still known (queued, running or
  finished), None when it is gone and must be submitted again.

A job runs ``python -m captrack.pipeline.stage_job SPEC`` (captrack.pipeline.jobs.worker_command;
``rank_command`` for a multi-rank job on one node); the worker writes its report beside the spec.
A new executor is a module of this package with a line starting ``@executor("name")`` on its class.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from captrack.files import read_json_or_none, write_atomic
from captrack.pipeline.jobs import StageJob
from captrack.pipeline.layout import WorkFolder
from captrack.registries import Registry

__all__ = ["EXECUTORS", "Executor", "JobRecord", "JobState", "JobStatus", "executor", "make_executor"]


class JobState(str, Enum):
    """Where a job is."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        """Whether the job ended (well or not)."""
        return self in (JobState.DONE, JobState.FAILED, JobState.CANCELLED)


@dataclass(frozen=True)
class JobStatus:
    """One job's state as its executor sees it."""

    job: str
    """The StageJob id."""
    state: JobState
    job_id: str = ""
    """The executor's own id (local: the worker's PID; slurm: the Slurm job id)."""
    host: str = ""
    gpus: str = ""
    """The CUDA_VISIBLE_DEVICES the job was given ("" on CPU)."""
    progress: str = ""
    """Its latest progress line (a training step, a requests bar), "" when none yet."""
    error: str = ""
    """FAILED / CANCELLED: the exit status or scheduler state, and the last lines of its log."""
    log: str = ""
    """Its log file (path as text)."""
    restarts: int = 0
    """How often the job started again (a Slurm requeue: preemption, its pre-limit signal, ``scontrol requeue``)."""


@dataclass(frozen=True)
class JobRecord:
    """What the driver records of a submitted job (``<workdir>/jobs/<id>.record.json``), to re-attach after a restart."""

    job: str
    executor: str
    job_id: str
    state: str
    host: str = ""
    gpus: str = ""
    log: str = ""
    driver: str = ""
    """The PID of the `captrack run` that wrote the record ("" in records of older versions)."""
    restarts: int = 0
    """How often the job started again so far (0 in records of older versions)."""

    @staticmethod
    def path(work: WorkFolder, job: str) -> Path:
        """Where the record of job `job` is kept."""
        return work.job_spec(job).with_name(f"{job}.record.json")

    @classmethod
    def of(cls, executor: str, status: JobStatus) -> JobRecord:
        """The record of `status` under `executor`."""
        return cls(status.job, executor, status.job_id, status.state.value, status.host, status.gpus, status.log,
                   str(os.getpid()), status.restarts)

    def write(self, work: WorkFolder) -> None:
        """Write (or replace) the record, atomically."""
        path = self.path(work, self.job)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, work: WorkFolder, job: str) -> JobRecord | None:
        """The record of job `job`, or None (never submitted, or not readable)."""
        raw = read_json_or_none(cls.path(work, job))
        try:
            return cls(**raw) if isinstance(raw, dict) else None
        except TypeError:
            return None


class Executor(ABC):
    """Places and runs stage jobs; see the module docstring for the protocol.

    Args:
        work: the run's work folder (specs in ``work.jobs``, logs in ``work.logs``).
        options: the experiment's ``executor:`` block without ``name`` (checked by :meth:`check_options`).
        log: where the executor says what it does (a line of text at a time).
    """

    name: ClassVar[str] = ""
    options_allowed: ClassVar[tuple[str, ...]] = ()
    """The keys its ``executor:`` block may hold besides ``name``."""
    poll_every_s: ClassVar[float] = 0.2
    """How long the driver waits between two polls."""
    can_detach: ClassVar[bool] = False
    """Whether its jobs run on when the driver returns (``captrack run --detach``); local workers end with the run."""

    def __init__(self, work: WorkFolder, options: Mapping[str, Any], log: Callable[[str], None] = print) -> None:
        self.work = work
        self.options = dict(options)
        self.log = log

    @classmethod
    def check_options(cls, options: Mapping[str, Any], where: str) -> None:
        """Refuse an unknown key of the ``executor:`` block (a close one named), before any work."""
        from captrack.errors import UnknownNameError

        for key in options:
            if key not in cls.options_allowed:
                raise UnknownNameError(f"key of {where}'s executor: {cls.name} block", key, cls.options_allowed)

    def describe(self) -> str:
        """One line: what this executor will do with the jobs (shown when the batch starts)."""
        return self.name

    def refusal(self, job: StageJob) -> str | None:
        """Why `job` can never run here (more GPUs or memory per GPU than there are), None when it can or only the
        scheduler knows (the default). ``captrack run`` (``--dry-run`` included) refuses such a stage before any work."""
        return None

    @abstractmethod
    def submit(self, job: StageJob, spec: Path) -> JobStatus:
        """Queue or start `job` (its spec written at `spec`); returns its first status."""

    def submit_all(self, jobs: list[tuple[StageJob, Path]]) -> list[JobStatus]:
        """Queue or start every job of `jobs` (each with its written spec), ready at the same time; their first statuses.
        The default submits them one by one; an executor that can submit them together (slurm: one array per stage
        kind and resources) does."""
        return [self.submit(job, spec) for job, spec in jobs]

    @abstractmethod
    def poll(self) -> list[JobStatus]:
        """The status of every job not yet reported finished (a finished one is reported once)."""

    @abstractmethod
    def cancel(self, job: str) -> None:
        """Cancel job `job` (a StageJob id) if it is queued or running."""

    @classmethod
    def still_out(cls, record: JobRecord) -> bool:
        """Whether a job recorded as queued or running may still be (``--status``, which asks no scheduler); False
        when it certainly ended (local: its worker or its driver is gone). The default: True, only the scheduler knows."""
        return True

    def attach(self, record: JobRecord) -> JobStatus | None:
        """Re-attach to a job an earlier driver submitted; None when it is gone (the default: jobs die with their driver)."""
        return None

    @abstractmethod
    def close(self, cancel: bool) -> None:
        """End of the run: with `cancel`, cancel every job still queued or running."""


EXECUTORS: Registry[type[Executor]] = Registry("executor", scan="captrack.pipeline.executors", marker="@executor(")
"""Every executor by name (``local``, ``slurm``)."""


def executor(name: str) -> Callable[[type[Executor]], type[Executor]]:
    """Class decorator registering an executor under `name` (write it at the start of a line)."""

    def decorate(cls: type[Executor]) -> type[Executor]:
        cls.name = name
        return EXECUTORS.add(name, cls)

    return decorate


def make_executor(block: Mapping[str, Any] | None, override: str | None, work: WorkFolder, where: str,
                  log: Callable[[str], None] = print) -> Executor:
    """The executor of a run: ``--executor`` (`override`) or the experiment's ``executor:`` block's name (default local).

    The block's other keys are its options; they apply when the block names that executor (an override naming
    another executor starts it with no options).

    Raises:
        UnknownNameError: an unknown executor name or option key (close names listed).
    """
    block = dict(block or {})
    named = str(block.pop("name", "local"))
    name = override or named
    cls = EXECUTORS.get(name)
    options = block if name == named else {}
    cls.check_options(options, where)
    return cls(work, options, log)
