"""A stage that runs in another process, as a job: a self-contained spec a worker runs without the experiment.

A :class:`StageJob` says what to run (a registered job kind: ``evaluate``, ``train``), with which
files (its arguments: JSON values, paths as absolute text), and what it needs (:class:`Needs`: GPUs,
ranks, CPU threads, planned memory per GPU from captrack.backends.memory_plan). Its :attr:`StageJob.id`
is derived from those inputs alone, so the same stage of the same experiment has the same id in every
run (what a driver started again re-attaches by). A worker runs it with::

    python -m captrack.pipeline.stage_job <workdir>/jobs/<id>.json

and never reads or plans the experiment; it writes its :class:`WorkerReport` (host, the
``CUDA_VISIBLE_DEVICES`` it was given, ranks, times) beside the spec. An executor
(captrack.pipeline.executors) decides where that command runs.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from captrack.errors import InputError
from captrack.files import read_json_or_none, write_atomic
from captrack.pipeline.experiment import config_hash

__all__ = ["WORKER_MODULE", "Attempt", "Needs", "Placement", "StageJob", "WorkerReport", "attempts", "forget_attempts",
           "note_attempt", "rank_command", "worker_command"]

WORKER_MODULE = "captrack.pipeline.stage_job"
"""The module a worker runs: ``python -m captrack.pipeline.stage_job SPEC.json``."""


@dataclass(frozen=True)
class Needs:
    """What a job needs where it runs."""

    gpus: int = 0
    """GPUs its placement needs (0: it runs on CPU cores; a `ranks`-rank captrack-ds job: one per rank)."""
    ranks: int = 1
    """Processes of one distributed launch (captrack-ds over N ranks; 1: one plain process)."""
    threads: int = 1
    """CPU threads per rank (torch intra-op threads; OMP_NUM_THREADS)."""
    gpu_memory: int = 0
    """Planned bytes per GPU (captrack.backends.memory_plan; 0: not planned, a GPU of its own)."""


@dataclass(frozen=True)
class StageJob:
    """One stage as a job: what to run, with which files, and what it needs."""

    kind: str
    """A job kind of captrack.pipeline.stage_job (``evaluate``, ``train``)."""
    name: str
    """File-safe name of the stage (its marker's stem, e.g. ``eval-base-0``)."""
    title: str
    """The stage's title as the run shows it."""
    args: dict[str, Any]
    """The kind's arguments: JSON values only, paths as absolute text."""
    needs: Needs = field(default_factory=Needs)
    env: dict[str, str] = field(default_factory=dict)
    """Environment the job's process(es) get on top of the executor's (e.g. CAPTRACK_DATA_DIR)."""
    python: str = ""
    """The interpreter its worker runs under ("": the driver's; the vLLM environment's for ``model: vllm``, a
    checkpoint's ``python:``: captrack.pipeline.interpreters)."""

    @property
    def id(self) -> str:
        """Stable id from the inputs (kind, arguments, GPUs, ranks, interpreter): ``<name>-<hash>``; never the threads or
        memory."""
        inputs = [self.kind, self.args, self.needs.gpus, self.needs.ranks, self.env] + ([self.python] if self.python else [])
        return f"{self.name}-{config_hash(inputs)[:12]}"

    def to_json(self) -> str:
        """The spec as JSON text (what ``stage_job`` reads)."""
        return json.dumps({"id": self.id, **asdict(self)}, indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str = "job spec") -> StageJob:
        """A spec read back from :meth:`to_json`'s text.

        Raises:
            InputError: not a spec (a key missing or of the wrong type), naming `where`.
        """
        try:
            raw = json.loads(text)
            job = cls(kind=str(raw["kind"]), name=str(raw["name"]), title=str(raw["title"]), args=dict(raw["args"]),
                      needs=Needs(**raw["needs"]), env={str(k): str(v) for k, v in raw.get("env", {}).items()},
                      python=str(raw.get("python", "")))
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{where}: not a captrack stage job spec ({exc}); it is written by `captrack run`") from exc
        if raw.get("id", job.id) != job.id:
            raise InputError(f"{where}: its id {raw.get('id')!r} is not its inputs' ({job.id}); it was edited by hand")
        return job

    def write(self, path: Path) -> Path:
        """Write the spec to `path` (atomically) and return it."""
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, self.to_json())
        return path

    @classmethod
    def read(cls, path: Path) -> StageJob:
        """The spec in file `path` (InputError when missing or not a spec)."""
        try:
            return cls.from_json(path.read_text(encoding="utf-8"), str(path))
        except OSError as exc:
            raise InputError(f"{path}: cannot read the job spec ({exc.strerror})") from exc


def worker_command(spec: Path, python: str | None = None) -> list[str]:
    """The command running a one-rank job: ``python -m captrack.pipeline.stage_job SPEC``."""
    return [python or sys.executable, "-m", WORKER_MODULE, str(spec)]


def rank_command(spec: Path, ranks: int, port: int, python: str | None = None) -> list[str]:
    """The command running a `ranks`-rank job on this node: torchrun over ``stage_job SPEC`` (each rank runs the spec;
    stage_job sets LOCAL_SIZE from torchrun's LOCAL_WORLD_SIZE, as DeepSpeed's launcher would)."""
    return [python or sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", str(ranks),
            "--master_addr", "127.0.0.1", "--master_port", str(port), "-m", WORKER_MODULE, str(spec)]


@dataclass(frozen=True)
class Placement:
    """Where a stage ran: recorded in its marker (and shown by ``captrack run --status``)."""

    executor: str
    job_id: str = ""
    host: str = ""
    gpus: str = ""
    """The CUDA_VISIBLE_DEVICES the job was given ("" on CPU)."""
    python: str = ""
    """The interpreter its worker ran under, as the worker reported it ("" when unknown)."""


@dataclass(frozen=True)
class WorkerReport:
    """What a worker says of its run, written beside its spec (``<spec>.report.json``) when the job ends well."""

    job: str
    host: str
    cuda_visible_devices: str | None
    ranks: int
    started: float
    ended: float
    python: str = ""
    """The interpreter the worker ran under (sys.executable; "" in reports of older versions)."""

    @staticmethod
    def path(spec: Path) -> Path:
        """Where the report of the job in `spec` is written."""
        return spec.with_name(spec.stem + ".report.json")

    @staticmethod
    def here(job: str, ranks: int, started: float, ended: float) -> WorkerReport:
        """This process's report (host name, CUDA_VISIBLE_DEVICES as given)."""
        return WorkerReport(job, socket.gethostname(), os.environ.get("CUDA_VISIBLE_DEVICES"), ranks, started, ended,
                            sys.executable)

    def write(self, spec: Path) -> None:
        """Write the report beside `spec` (atomically)."""
        write_atomic(self.path(spec), json.dumps(asdict(self), indent=2))

    @classmethod
    def read(cls, spec: Path) -> WorkerReport | None:
        """The report of the job in `spec`, or None (not written yet, or not readable)."""
        raw = read_json_or_none(cls.path(spec))
        try:
            return cls(**raw) if isinstance(raw, dict) else None
        except TypeError:
            return None


@dataclass(frozen=True)
class Attempt:
    """One start of a job (a requeued Slurm job starts again), noted beside its spec (``<spec>.attempts.json``)."""

    restart: int
    """The scheduler's restart count (``SLURM_RESTART_COUNT``; 0: the first start)."""
    job_id: str
    started: float


def _attempts_path(spec: Path) -> Path:
    return spec.with_name(spec.stem + ".attempts.json")


def attempts(spec: Path) -> list[Attempt]:
    """Every start noted for the job in `spec`, oldest first ([] when none, or not readable)."""
    raw = read_json_or_none(_attempts_path(spec))
    try:
        return [Attempt(**a) for a in raw] if isinstance(raw, list) else []
    except TypeError:
        return []


def note_attempt(spec: Path, restart: int, job_id: str, started: float) -> None:
    """Add a start of the job in `spec` to its attempts (rewritten atomically: one job writes it at a time)."""
    noted = [asdict(a) for a in attempts(spec)] + [asdict(Attempt(restart, job_id, started))]
    write_atomic(_attempts_path(spec), json.dumps(noted, indent=2))


def forget_attempts(spec: Path) -> None:
    """Forget the starts of an earlier submission (the job is submitted afresh)."""
    _attempts_path(spec).unlink(missing_ok=True)
