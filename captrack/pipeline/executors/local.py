"""The ``local`` executor: stage jobs as worker processes of `captrack run` on this node, packed onto its GPUs.

On a CPU node (no GPU in the inventory) it runs as many jobs at once as there are worker slots (one per
usable core; ``CAPTRACK_WORKERS`` or ``executor: {name: local, workers: N}`` wins), each with the torch
threads its spec names. On a node with G GPUs it packs the jobs onto them: a job gets the GPUs its
placement needs (one for an hf evaluation or a training, one per rank for a multi-rank captrack-ds
evaluation) through ``CUDA_VISIBLE_DEVICES``, and two jobs share a GPU only when their planned memory
(captrack.backends.memory_plan) fits it together; a job without a plan has its GPUs to itself. A
multi-rank job is started with torchrun over its GPUs (captrack.pipeline.jobs.rank_command).

The GPU inventory is the node's (torch.cuda, in ``CUDA_VISIBLE_DEVICES``' numbering), or given:
``CAPTRACK_GPUS=2x80GB`` (two GPUs, ids 0 and 1), ``CAPTRACK_GPUS=4:24GB,5:24GB`` (ids and sizes) or
``executor: {name: local, gpus: "2x80GB"}``; ``CAPTRACK_GPUS=0`` means none (a CPU node). Workers are
started with captrack.processes.spawn, so each dies with `captrack run`, however it ends: it cannot detach, and
``--status`` shows a job whose worker (or driver) is gone as ``lost``. A job needing more GPUs than the inventory
has, or more planned memory per GPU than its GPUs hold, is refused before any work (:meth:`LocalExecutor.refusal`).
An inventory names at most MAX_GPUS GPUs, each once, by index or ``GPU-``/``MIG-`` UUID.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from captrack.errors import InputError
from captrack.pipeline.executors import Executor, JobRecord, JobState, JobStatus, executor
from captrack.pipeline.interpreters import foreign_env, is_foreign
from captrack.pipeline.jobs import StageJob, WorkerReport, rank_command, worker_command
from captrack.pipeline.workers import latest_line, log_tail, slug
from captrack.processes import spawn, usable_cores, worker_count

__all__ = ["GPUS_ENV", "Gpu", "LocalExecutor", "claim", "gpu_inventory", "place", "release"]

GPUS_ENV = "CAPTRACK_GPUS"
"""Overrides the node's GPU inventory: ``2x80GB``, ``0:80GB,1:80GB`` or ``0`` (none)."""
_LAUNCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "LOCAL_SIZE", "MASTER_ADDR", "MASTER_PORT",
                "CUDA_VISIBLE_DEVICES")


@dataclass
class Gpu:
    """One GPU of the inventory and what runs on it."""

    id: str
    memory: int
    """Bytes (0: unknown, so no two jobs share it)."""
    planned: int = 0
    holders: set[str] = field(default_factory=set)
    exclusive: bool = False

    def takes(self, need: int) -> bool:
        """Whether a job planning `need` bytes per GPU (0: unplanned, wants it alone) fits here now."""
        if self.exclusive or (self.holders and (need <= 0 or self.memory <= 0)):
            return False
        return not self.holders or self.planned + need <= self.memory


def _size(text: str, where: str) -> int:
    from captrack.backends.memory_plan import parse_size

    try:
        return parse_size(text)
    except InputError as exc:
        raise InputError(f"{where}: GPU memory {text!r}: {str(exc).split(': ', 1)[-1]}") from None


MAX_GPUS = 4096
"""The most GPUs an inventory may name (no node has more; a larger count is a typo)."""
_GPU_ID = re.compile(r"\d{1,6}|(?:GPU|MIG)-[0-9A-Za-z][0-9A-Za-z/-]*")
"""What CUDA_VISIBLE_DEVICES takes: an index, or a GPU-/MIG- UUID."""


def _parse_inventory(text: str, where: str) -> list[Gpu]:
    """``2x80GB`` / ``2`` / ``0:80GB,1:80GB`` / ``0`` as GPUs (InputError naming `where` otherwise).

    Raises:
        InputError: no inventory, more than MAX_GPUS GPUs, an id that is no GPU index or UUID (``true``, ``-1``),
            or one id given twice.
    """
    text = text.strip()
    shown = text if len(text) <= 60 else text[:57] + "..."
    counted = re.fullmatch(r"(\d+)(?:x(.+))?", text)
    if counted:
        if len(counted.group(1)) > 6 or int(counted.group(1)) > MAX_GPUS:
            raise InputError(f"{where}: {shown!r} names {counted.group(1)[:20]} GPUs; a node has at most {MAX_GPUS}: give the "
                             "count of this node's GPUs, e.g. 2x80GB")
        memory = _size(counted.group(2), where) if counted.group(2) else 0
        return [Gpu(str(i), memory) for i in range(int(counted.group(1)))]
    gpus: list[Gpu] = []
    for part in text.split(","):
        ident, _, size = part.strip().partition(":")
        ident = ident.strip()
        if not _GPU_ID.fullmatch(ident):
            raise InputError(f"{where}: {shown!r} is no GPU inventory ({ident[:20]!r} is no GPU id: an index such as 0 or a "
                             "GPU-/MIG- UUID); give 2x80GB, 0:80GB,1:80GB or 0 (none)")
        if any(g.id == ident for g in gpus):
            raise InputError(f"{where}: {shown!r} names GPU {ident} twice; name each GPU once, e.g. 0:80GB,1:80GB")
        if len(gpus) >= MAX_GPUS:
            raise InputError(f"{where}: names more than {MAX_GPUS} GPUs; a node has at most {MAX_GPUS}")
        gpus.append(Gpu(ident, _size(size, where) if size else 0))
    return gpus


def _gpus_option(value: Any) -> str:
    """``executor.gpus`` as inventory text: text or a whole count (a bool, a float or a list is refused).

    Raises:
        InputError: anything else.
    """
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"executor: local, gpus: {value!r} is no GPU inventory; give text such as \"2x80GB\" or "
                         "\"0:80GB,1:80GB\", or a count (0: none)")
    return str(value)


def gpu_inventory(options: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None) -> list[Gpu]:
    """The GPUs jobs may use: ``executor.gpus``, else CAPTRACK_GPUS, else the node's (torch.cuda; none without CUDA)."""
    env = os.environ if env is None else env
    if options and options.get("gpus") is not None:
        return _parse_inventory(_gpus_option(options["gpus"]), "executor: local, gpus")
    if env.get(GPUS_ENV, "").strip():
        return _parse_inventory(env[GPUS_ENV], GPUS_ENV)
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    count = torch.cuda.device_count()
    ids = visible[:count] if visible else [str(i) for i in range(count)]
    return [Gpu(ident, int(torch.cuda.get_device_properties(i).total_memory)) for i, ident in enumerate(ids)]


@dataclass
class _Running:
    job: StageJob
    spec: Path
    process: Any
    handle: IO[bytes]
    log: Path
    gpus: list[str]
    slots: int
    started: float


@executor("local")
class LocalExecutor(Executor):
    """Worker processes on this node (see the module docstring)."""

    options_allowed = ("gpus", "workers")

    def __init__(self, work: Any, options: Mapping[str, Any], log: Any = print) -> None:
        super().__init__(work, options, log)
        self.check_options(self.options, "the experiment")
        self.gpus = gpu_inventory(self.options)
        workers = self.options.get("workers")
        self.slots = int(workers) if workers else worker_count(10**6, usable_cores())
        self.queue: list[tuple[StageJob, Path]] = []
        self.running: dict[str, _Running] = {}
        self.finished: list[JobStatus] = []
        self.host = socket.gethostname()

    @classmethod
    def check_options(cls, options: Mapping[str, Any], where: str) -> None:
        """Unknown keys, ``workers`` that is no whole number ≥ 1 and a ``gpus`` that is no inventory are refused
        before any work (a dry run included)."""
        super().check_options(options, where)
        workers = options.get("workers")
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
            raise InputError(f"{where}: executor: local, workers: {workers!r}: give a whole number ≥ 1 (worker processes "
                             "at once), or leave it out for one per usable core")
        if options.get("gpus") is not None:
            gpu_inventory(options, env={})

    @classmethod
    def still_out(cls, record: JobRecord) -> bool:
        """Local jobs die with their driver: one whose driver is gone, or recorded running whose worker (its PID,
        running this job's spec) is gone, ended (killed with `captrack run`, or the machine restarted)."""
        if record.driver.isdigit() and not _alive(int(record.driver)):
            return False
        if record.state == JobState.RUNNING.value:
            return record.job_id.isdigit() and _alive(int(record.job_id), record.job)
        return True

    def describe(self) -> str:
        if self.gpus:
            sizes = ", ".join(f"{g.id} ({g.memory / 1e9:.0f} GB)" if g.memory else g.id for g in self.gpus)
            return f"local: {len(self.gpus)} GPU(s): {sizes}"
        return f"local: {self.slots} worker slot(s) on CPU cores"

    def _wanted(self, job: StageJob) -> int:
        return max(job.needs.gpus, job.needs.ranks if job.needs.gpus else 0) if self.gpus else 0

    def refusal(self, job: StageJob) -> str | None:
        """More GPUs than the node has, more planned memory per GPU than enough of its GPUs hold, or an interpreter
        that is not on this host (a container image's, named for the Slurm executor)."""
        if is_foreign(job.python) and shutil.which(job.python) is None:
            return (f"runs under python: {job.python}, which is not on this host (an image's interpreter runs only "
                    "inside the Slurm executor's container:)")
        wanted, need = self._wanted(job), job.needs.gpu_memory
        if wanted > len(self.gpus):
            return f"needs {wanted} GPUs; this node has {len(self.gpus)} ({self.describe()})"
        if wanted and need > 0 and sum(g.memory <= 0 or g.memory >= need for g in self.gpus) < wanted:
            largest = max(g.memory for g in self.gpus)
            return (f"plans {need / 1e9:.1f} GB per GPU on {wanted} GPU(s); this node's GPUs hold {largest / 1e9:.1f} GB at "
                    "most: lower batch_size, spread it over more GPUs (model: captrack-ds, ranks: N) or use larger GPUs")
        return None

    def submit(self, job: StageJob, spec: Path) -> JobStatus:
        refused = self.refusal(job)
        if refused:
            status = JobStatus(job.id, JobState.FAILED, host=self.host, error=refused)
            self.finished.append(status)
            return status
        self.queue.append((job, spec))
        self._start_ready()
        return self._status(job.id)

    def _status(self, job: str) -> JobStatus:
        if job in self.running:
            run = self.running[job]
            return JobStatus(job, JobState.RUNNING, str(run.process.pid), self.host, ",".join(run.gpus),
                             latest_line(run.log), log=str(run.log))
        return JobStatus(job, JobState.QUEUED, host=self.host)

    def _place(self, job: StageJob) -> list[Gpu] | None:
        return place(self.gpus, job, self._wanted(job))

    def _start_ready(self) -> None:
        for job, spec in list(self.queue):
            if self.gpus:
                placed = self._place(job)
                if placed is None:
                    continue  # a later, smaller job may fit now
                self._start(job, spec, placed, 0)
            else:
                used = sum(r.slots for r in self.running.values())
                if self.running and used + job.needs.ranks > self.slots:
                    continue
                self._start(job, spec, [], job.needs.ranks)
            self.queue.remove((job, spec))

    def _start(self, job: StageJob, spec: Path, placed: list[Gpu], slots: int) -> None:
        claim(placed, job)
        env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_KEYS}
        threads = str(max(1, job.needs.threads))
        env.update(OMP_NUM_THREADS=threads, CAPTRACK_THREADS=threads, OMP_WAIT_POLICY="PASSIVE",
                   TOKENIZERS_PARALLELISM="false", **job.env)
        if self.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(g.id for g in placed)
        elif job.needs.ranks > 1:
            env.setdefault("DS_ACCELERATOR", "cpu")
        python = job.python or None
        command = (rank_command(spec, job.needs.ranks, _free_port(), python) if job.needs.ranks > 1 else
                   worker_command(spec, python))
        env = foreign_env(env, python)  # another interpreter (vLLM's environment): not this environment's PYTHONPATH
        log = self.work.log(slug(job.title))
        log.parent.mkdir(parents=True, exist_ok=True)
        handle = log.open("wb")
        process = spawn(command, env=env, stdout=handle, stderr=handle)
        try:
            self.running[job.id] = _Running(job, spec, process, handle, log, [g.id for g in placed], slots, time.time())
        except BaseException:  # a Ctrl-C before the worker is held here: close() would never stop it
            process.kill()
            process.wait()
            handle.close()
            raise
        self.log(f"started {job.title} (log: {log.name}{'; GPUs ' + ','.join(g.id for g in placed) if placed else ''})")

    def _release(self, run: _Running) -> None:
        run.handle.close()
        release(self.gpus, run.job)
        del self.running[run.job.id]

    def poll(self) -> list[JobStatus]:
        for run in [r for r in self.running.values() if r.process.poll() is not None]:
            code = run.process.returncode
            report = WorkerReport.read(run.spec)
            gpus = ",".join(run.gpus)
            if code == 0 and report is not None and report.job == run.job.id:
                status = JobStatus(run.job.id, JobState.DONE, str(run.process.pid), report.host, gpus, log=str(run.log))
            else:
                why = f"exit {code}" if code != 0 else "exit 0 but no worker report"
                status = JobStatus(run.job.id, JobState.FAILED, str(run.process.pid), self.host, gpus, log=str(run.log),
                                   error=f"{why}; last lines of {run.log}:\n{log_tail(run.log)}")
            self._release(run)
            self.finished.append(status)
        self._start_ready()
        out, self.finished = self.finished, []
        return out + [self._status(job.id) for job, _ in self.queue] + [self._status(j) for j in self.running]

    def cancel(self, job: str) -> None:
        for queued in [q for q in self.queue if q[0].id == job]:
            self.queue.remove(queued)
            self.finished.append(JobStatus(job, JobState.CANCELLED, host=self.host, error="cancelled while queued"))
        run = self.running.get(job)
        if run is not None:
            run.process.kill()
            run.process.wait()
            self._release(run)
            self.finished.append(JobStatus(job, JobState.CANCELLED, str(run.process.pid), self.host, ",".join(run.gpus),
                                           log=str(run.log), error="cancelled while running"))

    def close(self, cancel: bool) -> None:
        """Local workers never outlive the run: every one still running is stopped, cancel or not."""
        self.queue.clear()
        for run in list(self.running.values()):
            run.process.kill()
            run.process.wait()
            self._release(run)


def _alone(gpu: Gpu, need: int) -> bool:
    """Whether a job planning `need` bytes per GPU has `gpu` to itself (no plan, or more than the GPU holds)."""
    return need <= 0 or gpu.memory <= 0 or need > gpu.memory


def place(gpus: list[Gpu], job: StageJob, wanted: int) -> list[Gpu] | None:
    """The `wanted` GPUs `job` gets now (the emptiest first), or None when that many are not free for it."""
    fitting = [g for g in gpus if g.takes(0 if _alone(g, job.needs.gpu_memory) else job.needs.gpu_memory)]
    fitting.sort(key=lambda g: (len(g.holders), g.planned, gpus.index(g)))
    return fitting[:wanted] if len(fitting) >= wanted else None


def claim(placed: list[Gpu], job: StageJob) -> None:
    """Record that `job` runs on `placed` (its planned memory on each; alone where it has no plan that fits)."""
    for gpu in placed:
        gpu.holders.add(job.id)
        alone = _alone(gpu, job.needs.gpu_memory)
        gpu.exclusive = gpu.exclusive or alone
        gpu.planned += 0 if alone else job.needs.gpu_memory


def release(gpus: list[Gpu], job: StageJob) -> None:
    """Record that `job` ended: its GPUs take other jobs again."""
    for gpu in gpus:
        if job.id in gpu.holders:
            gpu.holders.discard(job.id)
            alone = _alone(gpu, job.needs.gpu_memory)
            gpu.planned -= 0 if alone else job.needs.gpu_memory
            gpu.exclusive = gpu.exclusive and not alone


def _alive(pid: int, mentions: str = "") -> bool:
    """Whether process `pid` runs (not a zombie) and, where /proc tells, its command line mentions `mentions`."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: alive
    except (OverflowError, OSError):
        return False
    proc = Path("/proc") / str(pid)
    try:
        if proc.joinpath("stat").read_text().rpartition(")")[2].split()[0] in ("Z", "X"):
            return False
        return not mentions or mentions in proc.joinpath("cmdline").read_bytes().decode("utf-8", "replace")
    except (OSError, IndexError):
        return True  # no /proc here: the PID answering is all that is known


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
