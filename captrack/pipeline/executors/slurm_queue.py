"""What Slurm says of a job: its state now, and its final state once it left the controller's memory.

The slurm executor (captrack.pipeline.executors.slurm) asks here, one call for all of a run's jobs:

- ``squeue -t all -r`` for every job (an array's task as ``ARRAYID_TASK``, one line each) the controller still holds: queued, running, requeued, and finished ones
  for ``MinJobAge`` seconds (300 by default);
- for a job it no longer holds, ``sacct`` where accounting is on, else the job completion log
  (``JobCompType=jobcomp/filetxt``; its path from ``scontrol show config``), Slurm's own record of each
  finished job. A job found nowhere is gone (it was never submitted here, or its record was purged).

Slurm's states map onto captrack's :class:`~captrack.pipeline.executors.JobState`: PENDING and the requeue
states are QUEUED; RUNNING, COMPLETING and CONFIGURING are RUNNING; COMPLETED is DONE; CANCELLED is
CANCELLED; every other final state (FAILED, TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, PREEMPTED, ...) is FAILED.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from captrack.errors import InputError
from captrack.pipeline.executors import JobState

__all__ = ["SlurmState", "cancel_jobs", "completion_log", "job_states", "latest_progress", "live_job_ids",
           "log_tail", "offers_gpus", "partition_gpus", "require_slurm"]

_QUEUED = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESV_DEL_HOLD", "SPECIAL_EXIT",
           "STOPPED"}
_RUNNING = {"RUNNING", "COMPLETING", "CONFIGURING", "SIGNALING", "STAGE_OUT", "RESIZING"}
_TIMEOUT_S = 60


@dataclass(frozen=True)
class SlurmState:
    """One job as Slurm reports it."""

    job_id: str
    state: str
    """Slurm's state name (``COMPLETED``, ``CANCELLED``, ``RUNNING``, ...), without ``by UID`` or ``+``."""
    node: str = ""
    exit_code: str = ""

    @property
    def captrack_state(self) -> JobState:
        """The state in captrack's terms (see the module docstring)."""
        if self.state in _QUEUED:
            return JobState.QUEUED
        if self.state in _RUNNING:
            return JobState.RUNNING
        if self.state == "COMPLETED":
            return JobState.DONE
        if self.state == "CANCELLED":
            return JobState.CANCELLED
        return JobState.FAILED


def require_slurm() -> None:
    """Refuse to run without Slurm's commands here (sbatch, squeue, scancel), saying how to get them.

    Raises:
        InputError: a command is missing.
    """
    missing = [c for c in ("sbatch", "squeue", "scancel", "srun") if shutil.which(c) is None]
    if missing:
        raise InputError(f"executor slurm: {', '.join(missing)} not found on this host; run `captrack run` on a host "
                         "that submits to your cluster (a login node), or start a local one with scripts/slurm-up.sh")


def _command(argv: list[str]) -> str | None:
    """The output of a Slurm command, None when it failed (an unknown job id, accounting off)."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def _clean(state: str) -> str:
    return state.split()[0].rstrip("+").upper() if state.strip() else "UNKNOWN"


def _squeue(ids: list[str]) -> dict[str, SlurmState]:
    """The jobs among `ids` the controller still holds (one call; each id alone when one of them is unknown)."""
    found: dict[str, SlurmState] = {}
    out = _command(["squeue", "-h", "-r", "-t", "all", "-o", "%i|%T|%N", "-j", ",".join(ids)])
    if out is None and len(ids) > 1:
        for one in ids:
            found.update(_squeue([one]))
        return found
    for line in (out or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) == 3 and parts[0] in ids:
            found[parts[0]] = SlurmState(parts[0], _clean(parts[1]), parts[2])
    return found


def _sacct(ids: list[str]) -> dict[str, SlurmState]:
    """Final states from Slurm's accounting (empty where accounting is off)."""
    out = _command(["sacct", "-n", "-X", "-P", "-o", "JobID,State,NodeList,ExitCode", "-j", ",".join(ids)])
    found: dict[str, SlurmState] = {}
    for line in (out or "").splitlines():
        parts = line.strip().split("|")
        if len(parts) == 4 and parts[0] in ids:
            found[parts[0]] = SlurmState(parts[0], _clean(parts[1]), parts[2], parts[3])
    return found


def completion_log() -> Path | None:
    """The job completion log (jobcomp/filetxt) the controller writes, None when it keeps none."""
    out = _command(["scontrol", "show", "config"]) or ""
    config = dict(re.findall(r"^(\w+)\s*=\s*(.*?)\s*$", out, flags=re.MULTILINE))
    if config.get("JobCompType") != "jobcomp/filetxt" or not config.get("JobCompLoc"):
        return None
    return Path(config["JobCompLoc"])


def _record_id(fields: dict[str, str]) -> str:
    """A completion record's job id as squeue and sbatch name it: ``ARRAYID_TASK`` for an array's task (its own JobId
    is an internal one), else its JobId."""
    array, task = fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", "")
    if array.isdigit() and array != "0" and task.isdigit() and int(task) < 4294967294:  # Slurm's NO_VAL: no array
        return f"{array}_{task}"
    return fields.get("JobId", "")


def _completion_records(ids: list[str]) -> dict[str, SlurmState]:
    """Each job's last final record in the job completion log (a requeue writes a PENDING one: not final).

    An array cancelled while all of it was pending is never split into tasks: Slurm writes one record for it, with the
    array's JobId and no task fields. That record is the final state of each of its tasks that has none of its own."""
    log = completion_log()
    found: dict[str, SlurmState] = {}
    whole: dict[str, SlurmState] = {}  # array id -> the record of the array as one (unsplit) job
    if log is None or not log.is_file():
        return found
    wanted = set(ids)
    arrays = {i.split("_", 1)[0] for i in wanted if "_" in i}
    with log.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            fields = dict(re.findall(r"(\w+)=(\S*)", line))
            job, state = _record_id(fields), _clean(fields.get("JobState", ""))
            if state in _QUEUED | _RUNNING:
                continue
            record = SlurmState(job, state, fields.get("NodeList", ""), fields.get("ExitCode", ""))
            if job in wanted:
                found[job] = record
            elif job in arrays:
                whole[job] = record
    for task in sorted(wanted - set(found)):
        array = task.split("_", 1)[0]
        if "_" in task and array in whole:
            found[task] = SlurmState(task, whole[array].state, whole[array].node, whole[array].exit_code)
    return found


def job_states(ids: Iterable[str]) -> dict[str, SlurmState]:
    """Slurm's state of each job in `ids`; a job Slurm knows nothing of is left out."""
    wanted = sorted(set(ids), key=lambda x: (len(x), x))
    if not wanted:
        return {}
    found = _squeue(wanted)
    rest = [i for i in wanted if i not in found]
    if rest:
        found.update(_sacct(rest))
        rest = [i for i in rest if i not in found]
    if rest:
        found.update(_completion_records(rest))
    return found


def offers_gpus(partition: str | None) -> bool:
    """Whether a node of `partition` (None: the default one) has GPUs as a generic resource (``sinfo %G``); True when
    sinfo does not answer (a GPU asked for where there is none is then refused by sbatch, saying so)."""
    out = _command(["sinfo", "-h", "-o", "%G|%P", *(["-p", partition] if partition else [])])
    if out is None:
        return True
    rows = [line.split("|", 1) for line in out.splitlines() if "|" in line]
    if not partition:
        rows = [r for r in rows if r[1].strip().endswith("*")] or rows  # the default partition, marked with *
    return not rows or any("gpu" in gres for gres, _ in rows)


def partition_gpus(partition: str | None) -> int | None:
    """The most GPUs one node of `partition` (None: the default one) has (``sinfo %G``: ``gpu:4``, ``gpu:a100:4(S:0-1)``,
    several types summed); 0 when its nodes have none; None when sinfo does not answer (it cannot tell)."""
    out = _command(["sinfo", "-h", "-o", "%G|%P", *(["-p", partition] if partition else [])])
    rows = [line.split("|", 1) for line in (out or "").splitlines() if "|" in line]
    if not partition:
        rows = [r for r in rows if r[1].strip().endswith("*")] or rows
    if not rows:
        return None
    counts = [sum(int(n) for n in re.findall(r"(?:^|,)gpu(?::[^:,(]+)?:(\d+)", gres.strip())) for gres, _ in rows]
    return max(counts)


def live_job_ids(ids: Iterable[str]) -> list[str]:
    """The jobs of `ids` still queued or running (what ``squeue`` lists)."""
    return [s.job_id for s in job_states(ids).values() if not s.captrack_state.finished]


def cancel_jobs(ids: Iterable[str]) -> None:
    """``scancel`` these jobs (one call; jobs already finished are ignored by Slurm)."""
    wanted = sorted(set(ids))
    if wanted:
        _command(["scancel", *wanted])


_PROGRESS = re.compile(r"\b\d+/\d+\b|\d+%\|")
_WARNING = re.compile(r"\bWARNING\b|\bwarn(?:ing)?s?\.warn|\w+Warning:")


def _tail_text(log: Path, size: int = 16384) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - size))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


def latest_progress(log: Path) -> str:
    """A job's latest progress line in its log (a training step, a requests bar), never a warning; "" when none yet."""
    parts = [p.strip() for p in re.split(r"[\r\n]+", _tail_text(log)) if p.strip()]
    progress = [p for p in parts if _PROGRESS.search(p) and not _WARNING.search(p)]
    return progress[-1][:160] if progress else ""


def log_tail(log: Path, lines: int = 15) -> str:
    """The last `lines` lines of a job's log (tqdm's carriage-return redraws kept as their last state)."""
    text = _tail_text(log, 65536)
    if not text:
        return f"(no log at {log})"
    kept = [re.split(r"\r", line)[-1] for line in text.splitlines()]
    return "\n".join([line for line in kept if line.strip()][-lines:])
