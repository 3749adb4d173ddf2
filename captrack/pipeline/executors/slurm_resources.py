"""The slurm executor's ``executor:`` block: each stage kind's resources, checked at plan time, as submitit's parameters.

The block's resource keys at its top level are every stage's defaults; a ``train:`` or ``evaluate:`` sub-block
overrides them for the stages of that kind (:func:`stage_options`)::

    executor:
      name: slurm
      time: 60                   # every stage: minutes or [D-]HH:MM:SS
      array_parallelism: 8       # stages of one kind ready together: one array, at most 8 tasks at once
      signal: USR1@120           # the pre-limit signal: the job requeues itself and resumes from its request cache
      train: {partition: gpu, gpus: 1, mem_gb: 64, time: "04:00:00"}
      evaluate:
        partition: eval
        gpus: 1
        container: {image: /shared/captrack.sqsh, mounts: ["/shared:/shared"]}   # Pyxis (srun --container-image)
        setup: ["module load cuda/12.4"]

Every value is checked before any work (:func:`check_block`): a text value is one printable line, a number is finite
and positive, a time is Slurm's, an sbatch line is one option. :func:`resources_line` says what a job asks for and its
GPU-hours at most (GPUs x its time limit), as ``captrack run --dry-run`` prints it.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from captrack.errors import InputError, UnknownNameError
from captrack.pipeline.jobs import StageJob

__all__ = ["DEFAULT_MINUTES", "DEFAULT_SIGNAL", "RESOURCE_KEYS", "STAGE_KINDS", "Container", "check_block",
           "evaluates_in_container", "gpu_hours", "launch_python", "positive_number", "preempt_signal", "resources_line",
           "sbatch_parameters", "stage_options"]

DEFAULT_MINUTES = 24 * 60
"""Each job's wall-time limit when the experiment names none (submitit's own default is 5 minutes)."""
DEFAULT_SIGNAL = "USR1@120"
"""Slurm's signal to a job before its time limit (``--signal``): USR1 two minutes before (with a short limit, at most
half of it less Slurm's resolution); the job then requeues itself."""
SIGNAL_RESOLUTION_S = 30
"""Slurm checks time limits every 30 s (slurmctld's PERIODIC_TIMEOUT) and sends ``--signal=NAME@S`` at the first check
at most S + 30 s before the limit: so it comes between S and S + 30 s before it (at once when S + 30 s reach the start,
before the job can catch it: the job then dies of it)."""
RESOURCE_KEYS = ("partition", "account", "qos", "time", "gpus", "cpus", "mem_gb", "constraint", "sbatch", "setup",
                 "container", "array_parallelism", "signal")
"""The keys that say what a job gets: at the block's top level (every stage) or in a stage kind's sub-block."""
STAGE_KINDS = ("train", "evaluate")
"""The stage kinds a sub-block of the ``executor:`` block may be named after."""
_RUNTIMES = ("pyxis", "apptainer")



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


def positive_number(value: Any, key: str, what: str, where: str) -> float:
    """A finite positive number (`value` of `key`); inf, nan, 0, a negative, a bool or text is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}: executor {key} must be a positive number of {what}, not {value!r}")
    return value


def _lines(value: Any, key: str, where: str) -> list[str]:
    """A list of text lines (one text is a list of one), each one printable line: a line break would end a
    ``#SBATCH`` line or a setup line and run the rest as a shell line of the batch script."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise InputError(f"{where}: executor {key} must be a list of text lines, not {value!r}")
    for line in value:
        if not line.strip().isprintable():
            raise InputError(f"{where}: executor {key} line {line!r} holds a line break or a control character; give "
                             "each line as its own list item")
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


def _whole(value: Any, key: str, where: str, least: int = 0) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise InputError(f"{where}: executor {key} must be a whole number of at least {least}, not {value!r}")
    return value


def preempt_signal(value: Any, where: str) -> tuple[str, int]:
    """The pre-limit signal ``NAME@SECONDS`` (USR1 or USR2, 1 to 65535 seconds before the limit) as (name, seconds).

    Raises:
        InputError: anything else (``B:`` is refused: the signal must reach the job's step, where captrack listens).
    """
    match = re.fullmatch(r"(?:SIG)?(USR1|USR2)@(\d{1,5})", value.strip()) if isinstance(value, str) else None
    if not match or not 0 < int(match[2]) <= 65535:
        raise InputError(f"{where}: executor signal {value!r} is not USR1@SECONDS or USR2@SECONDS (seconds before the "
                         f"time limit, 1 to 65535), e.g. signal: {DEFAULT_SIGNAL}")
    return match[1], int(match[2])


@dataclass(frozen=True)
class Container:
    """Where a job's Python runs: a Pyxis/enroot image (``srun --container-image``) or an Apptainer one (``apptainer exec``)."""

    image: str
    runtime: str = "pyxis"
    mounts: tuple[str, ...] = ()
    """``SOURCE:TARGET[:FLAGS]`` each; the work folder must be among them (the jobs read their specs there)."""

    @classmethod
    def read(cls, value: Any, where: str) -> Container:
        """The ``container:`` mapping {image, runtime (pyxis | apptainer, default pyxis), mounts: [SRC:DST, ...]}.

        Raises:
            InputError: an unknown key, a value that is not one printable word (mounts: no comma either).
        """
        if not isinstance(value, Mapping) or "image" not in value:
            raise InputError(f"{where}: executor container must be a mapping with an image (and optionally runtime: "
                             f"pyxis|apptainer, mounts: [SRC:DST]), not {value!r}")
        for key in value:
            if key not in ("image", "runtime", "mounts"):
                raise UnknownNameError(f"key of {where}'s executor container", str(key), ("image", "runtime", "mounts"))
        mounts = _lines(value.get("mounts"), "container mounts", where)
        for word in (value["image"], *mounts):
            if not isinstance(word, str) or not word.strip() or not word.isprintable() or " " in word.strip():
                raise InputError(f"{where}: executor container value {word!r} is not one word on one line")
        if any("," in m for m in mounts):
            raise InputError(f"{where}: executor container mounts {mounts!r}: one SRC:DST per item, no comma")
        runtime = value.get("runtime", "pyxis")
        if runtime not in _RUNTIMES:
            raise InputError(f"{where}: executor container runtime {runtime!r} is not one of {', '.join(_RUNTIMES)}")
        return cls(str(value["image"]).strip(), str(runtime), tuple(mounts))

    def srun_args(self) -> list[str]:
        """Pyxis's options to srun (none for Apptainer, which wraps the Python command instead)."""
        if self.runtime != "pyxis":
            return []
        return [f"--container-image={self.image}", *([f"--container-mounts={','.join(self.mounts)}"] if self.mounts else [])]

    def prefix(self, gpus: int) -> list[str]:
        """Apptainer's command before the job's Python (``--nv`` when the job has GPUs); none for Pyxis."""
        if self.runtime != "apptainer":
            return []
        binds = ["--bind", ",".join(self.mounts)] if self.mounts else []
        return ["apptainer", "exec", *(["--nv"] if gpus else []), *binds, self.image]


def stage_options(options: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The resource options of a stage of `kind`: the block's top-level resource keys, then its `kind` sub-block's."""
    merged = {k: v for k, v in options.items() if k in RESOURCE_KEYS}
    sub = options.get(kind)
    return {**merged, **(dict(sub) if isinstance(sub, Mapping) else {})}


def evaluates_in_container(block: Mapping[str, Any]) -> bool:
    """Whether an experiment's ``executor:`` block runs its evaluation jobs inside a container image (Slurm's
    ``container:``, at the block's top level or under ``evaluate:``; the block may leave the executor's name to
    ``--executor slurm``, and ``--executor local``, which runs no container, refuses such a job on its own)."""
    return stage_options(block, "evaluate").get("container") is not None


def check_block(options: Mapping[str, Any], where: str) -> None:
    """Refuse, before any work, a stage sub-block that is no mapping or holds an unknown key, and every value a job of
    any kind could not be submitted with.

    Raises:
        UnknownNameError / InputError: naming the key, the value and what to give.
    """
    for kind in STAGE_KINDS:
        sub = options.get(kind)
        if sub is None:
            continue
        if not isinstance(sub, Mapping):
            raise InputError(f"{where}: executor {kind}: must be a mapping of resources ({', '.join(RESOURCE_KEYS)}), "
                             f"not {sub!r}")
        for key in sub:
            if key not in RESOURCE_KEYS:
                raise UnknownNameError(f"key of {where}'s executor {kind}: block", str(key), RESOURCE_KEYS)
    for kind in STAGE_KINDS:
        said = where if kind not in options else f"{where} (executor {kind}:)"
        sbatch_parameters(stage_options(options, kind), StageJob(kind, "check", "check", {}), said)


def sbatch_parameters(options: Mapping[str, Any], job: StageJob, where: str = "the experiment") -> dict[str, Any]:
    """submitit's parameters for one job from its stage kind's resource options (:func:`stage_options`) and its needs.

    Raises:
        InputError: a value that cannot be used (a time that is no time, an sbatch line that is no option, a signal
            later than the time limit allows).
    """
    gpus = _whole(options.get("gpus", job.needs.gpus), "gpus", where)
    cpus = _whole(options.get("cpus", max(1, job.needs.threads) * max(1, job.needs.ranks)), "cpus", where)
    minutes = _minutes(options.get("time", DEFAULT_MINUTES), where)
    params: dict[str, Any] = {"job_name": f"captrack-{job.name}", "time": minutes, "cpus_per_task": max(1, cpus),
                              "stderr_to_stdout": True, "setup": _lines(options.get("setup"), "setup", where) or None}
    if gpus:
        params["gpus_per_node"] = gpus
    for key in ("partition", "account", "qos", "constraint"):
        if options.get(key) is not None:
            params[key] = _field(options[key], key, where)
    if options.get("mem_gb") is not None:
        params["mem_gb"] = positive_number(options["mem_gb"], "mem_gb", "GB", where)
    if options.get("array_parallelism") is not None:
        params["array_parallelism"] = _whole(options["array_parallelism"], "array_parallelism", where, least=1)
    name, seconds = preempt_signal(options.get("signal", DEFAULT_SIGNAL), where)
    if "signal" not in options:  # the default: never earlier than half the time limit (resolution included)
        seconds = min(seconds, max(1, minutes * 30 - SIGNAL_RESOLUTION_S // 2))
    if seconds + SIGNAL_RESOLUTION_S >= minutes * 60:
        raise InputError(f"{where}: executor signal {name}@{seconds} comes at or before the job's start (its time limit "
                         f"is {minutes} minute(s), and Slurm may send it up to {SIGNAL_RESOLUTION_S} s early); give "
                         f"fewer seconds, e.g. signal: {name}@{max(1, minutes * 30 - SIGNAL_RESOLUTION_S // 2)}")
    extra = {"signal": f"{name}@{seconds}", **_sbatch_lines(_lines(options.get("sbatch"), "sbatch", where), where)}
    params["additional_parameters"] = extra
    params["setup"] = [f"export SUBMITIT_PREEMPT_SIGNAL={name}", *(params["setup"] or [])]
    if options.get("container") is not None:
        container = Container.read(options["container"], where)
        if container.srun_args():
            params["srun_args"] = container.srun_args()
    return params


def launch_python(options: Mapping[str, Any], python: str, gpus: int) -> str:
    """The shell text submitit starts the job's Python with: `python`, after Apptainer's ``exec`` when the stage's
    container is one."""
    container = Container.read(options["container"], "executor") if options.get("container") is not None else None
    return shlex.join([*(container.prefix(gpus) if container else []), python])


def gpu_hours(params: Mapping[str, Any]) -> float:
    """The most GPU-hours a job of these parameters can cost: its GPUs x its time limit."""
    return float(params.get("gpus_per_node", 0)) * float(params["time"]) / 60


def resources_line(params: Mapping[str, Any], options: Mapping[str, Any], planned_bytes: int = 0) -> str:
    """What a job asks Slurm for (`params`, from its stage's `options`), its planned memory per GPU and its GPU-hours at
    most, on one line."""
    asked = [f"partition {params.get('partition', '(default)')}", f"{params.get('gpus_per_node', 0)} GPU(s)",
             f"{params['cpus_per_task']} CPU(s)",
             f"{params['mem_gb']:g} GB" if "mem_gb" in params else "the partition's memory",
             f"time {params['time']} min"]
    asked += [f"{k} {params[k]}" for k in ("account", "qos", "constraint") if k in params]
    if options.get("container") is not None:
        container = Container.read(options["container"], "executor")
        asked.append(f"container {container.image} ({container.runtime})")
    planned = f"planned {planned_bytes / 1e9:.1f} GB per GPU" if planned_bytes else "no planned GPU memory"
    return f"{', '.join(asked)}; {planned}; at most {gpu_hours(params):.2f} GPU-hour(s)"
