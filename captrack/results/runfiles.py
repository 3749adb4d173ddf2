"""Find and describe lm-eval runs on disk: results_*.json plus samples_<task>_*.jsonl."""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.bounded import MAX_DATA_BYTES, load_json, read_bytes
from captrack.errors import InputError

__all__ = [
    "Run",
    "TaskInfo",
    "discover_runs",
    "file_digest",
    "file_sha256",
    "file_state",
    "first_bad_line",
    "judged_path",
    "results_files",
    "results_files_of_date",
    "results_path_of",
    "run_output_files",
    "samples_error",
    "samples_path",
    "stored_path",
]


@dataclass(frozen=True)
class TaskInfo:
    """One task of a run: its version, output type, logged (metric, filter) pairs and samples file."""

    name: str
    version: str
    output_type: str
    metrics: tuple[tuple[str, str], ...]
    samples: Path
    expected_docs: int | None = None
    judged: Path | None = None  # verdicts written by `captrack judge` (judged_<task>_<date>.jsonl)


def judged_path(samples: Path) -> Path:
    """Where `captrack judge` writes the verdicts for a samples file: ``judged_<task>_<date>.jsonl`` beside it."""
    return samples.with_name("judged_" + samples.name.removeprefix("samples_"))


def results_files(folder: Path) -> Iterator[Path]:
    """lm-eval's results files (``results_*.json``) anywhere under `folder`, in no particular order."""
    return folder.rglob("results_*.json")


def run_output_files(folder: Path) -> list[Path]:
    """Every file lm-eval (results, samples) and `captrack judge` (verdicts) wrote anywhere under `folder`."""
    return sorted(p for pattern in ("results_*.json", "samples_*.jsonl", "judged_*.jsonl") for p in folder.rglob(pattern))


def results_files_of_date(folder: Path, date_id: str) -> list[Path]:
    """The results files lm-eval wrote under `folder` for one run (``results_<date_id>.json``), sorted."""
    return sorted(folder.rglob(f"results_{date_id}.json"))


def results_path_of(folder: Path, date_id: str) -> Path:
    """Where lm-eval writes a run's results file in `folder`: ``results_<date_id>.json`` (captrack import writes
    another tool's outcomes there too, captrack.imports.tool_outcomes)."""
    return folder / f"results_{date_id}.json"


def samples_path(results_path: Path, task: str) -> Path:
    """lm-eval's per-sample log of `task` beside a results file: ``samples_<task>_<date>.jsonl``.

    Raises:
        InputError: a task name that cannot be part of a file name (a '/', a '\\' or a NUL in it).
    """
    if any(c in task for c in "/\\\0") or not task.strip():
        raise InputError(f"{results_path}: task name {task!r} cannot name a samples file (it holds a '/', a '\\' or "
                         "a NUL, or is blank); rename the task in its YAML (e.g. '/' -> '_') and run it again")
    return results_path.with_name(f"samples_{task}_{results_path.stem.removeprefix('results_')}.jsonl")


def file_state(path: Path) -> tuple[int, int]:
    """(size, modification time in ns) of a file: it changed when these did."""
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns


def stored_path(text: str, anchor: Path | None) -> Path:
    """A path the store recorded: absolute as stored today; a relative one (older stores) is taken as is
    when it exists from here, else against `anchor` (the store's folder), so pages do not depend on the cwd."""
    path = Path(text)
    if path.is_absolute() or anchor is None or path.exists():
        return path
    return anchor / path


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    _feed(path, digest.update)
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    """A fast fingerprint of a file's bytes (``xxh3_128:<hex>``): what the store records of each samples file,
    to tell later whether the file still holds the bytes ingested (not a security hash)."""
    import xxhash

    digest = xxhash.xxh3_128()
    _feed(path, digest.update)
    return "xxh3_128:" + digest.hexdigest()


def _feed(path: Path, update: Callable[[memoryview], object]) -> None:
    """Pass a file's bytes to `update` in 4 MiB blocks, read into one reused buffer (a new block per read
    costs the kernel a fresh allocation each time: several times the hashing itself)."""
    with path.open("rb", buffering=0) as handle:
        block = bytearray(min(1 << 22, os.fstat(handle.fileno()).st_size + 1))  # a small file: a small buffer
        view = memoryview(block)
        while size := handle.readinto(block):
            update(view[:size])


@dataclass(frozen=True)
class Run:
    """One lm-eval invocation (one results file) and its per-sample logs."""

    run_id: str
    results_path: Path
    model_name: str
    checkpoint: str
    seed: int
    lm_eval_version: str
    tasks: tuple[TaskInfo, ...]
    config: dict[str, Any] = field(default_factory=dict)


def discover_runs(path: str | Path) -> list[Run]:
    """All runs under `path` (an lm-eval --output_path, a model folder, or a results file).

    Raises:
        InputError: nothing to read, unreadable results, or no per-sample logs.
    """
    root = Path(path)
    if root.is_file():
        results = [root]
    elif root.is_dir():
        results = sorted(root.rglob("results_*.json"))
    else:
        raise InputError(f"{root}: no such file or folder")
    if not results:
        raise InputError(
            f"{root}: no lm-eval results_*.json found; point at the --output_path of an lm-eval run"
        )
    return [_read_run(p) for p in results]


def _read_run(results_path: Path) -> Run:
    try:
        raw_bytes = read_bytes(results_path, MAX_DATA_BYTES)
        data = load_json(raw_bytes)
    except (OSError, ValueError) as exc:  # ValueError: invalid JSON or bytes that are not UTF-8
        raise InputError(f"{results_path}: not a readable lm-eval results file: {exc}") from exc
    if not isinstance(data, dict):
        raise InputError(f"{results_path}: not an lm-eval results file (a JSON object); got {type(data).__name__}")
    date_id = results_path.stem.removeprefix("results_")
    configs: dict[str, Any] = data.get("configs") or {}
    versions: dict[str, Any] = data.get("versions") or {}
    scores: dict[str, Any] = data.get("results") or {}
    counts: dict[str, Any] = data.get("n-samples") or {}
    tasks = []
    missing = []
    for name in sorted(configs):
        samples = samples_path(results_path, name)
        if not samples.is_file():
            missing.append(name)
            continue
        tasks.append(
            TaskInfo(
                name=name,
                version=str(versions.get(name, configs[name].get("metadata", {}).get("version", ""))),
                output_type=str(configs[name].get("output_type", "")),
                metrics=_logged_metrics(scores.get(name, {})),
                samples=samples,
                expected_docs=(counts.get(name) or {}).get("effective"),
                judged=judged_path(samples) if judged_path(samples).is_file() else None,
            )
        )
    if missing:
        raise InputError(
            f"{results_path}: no per-sample log for task(s) {', '.join(missing)} "
            f"(expected samples_<task>_{date_id}.jsonl next to it); "
            "re-run lm-eval with --log_samples"
        )
    config: dict[str, Any] = data.get("config") or {}
    return Run(
        run_id=hashlib.sha1(raw_bytes).hexdigest()[:16],
        results_path=results_path,
        model_name=str(data.get("model_name") or _pretrained(config) or results_path.parent.name),
        checkpoint=str(_pretrained(config) or data.get("model_name") or ""),
        seed=int(config.get("random_seed") or 0),
        lm_eval_version=str(data.get("lm_eval_version", "")),
        tasks=tuple(tasks),
        config=config,
    )


def _pretrained(config: dict[str, Any]) -> str:
    args = config.get("model_args")
    if isinstance(args, dict):
        return str(args.get("pretrained", ""))
    if isinstance(args, str):
        for part in args.split(","):
            key, _, value = part.partition("=")
            if key.strip() == "pretrained":
                return value.strip()
    return ""


def _logged_metrics(task_scores: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    pairs = []
    for key in task_scores:
        metric, sep, filter_name = key.partition(",")
        if sep and not metric.endswith("_stderr"):
            pairs.append((metric, filter_name))
    return tuple(sorted(pairs))


def first_bad_line(path: Path, proportions: Mapping[str, bool] | None = None) -> tuple[int, str] | None:
    """Return (line number, problem) of the first line ingest must refuse, else None.

    A line is refused when it is not UTF-8, not a JSON object, repeats a (doc_id, filter) of an earlier
    line, or logs a non-finite value (NaN, Infinity) or, for a metric that is a proportion (True in
    `proportions`), a value outside [0, 1], for any metric named in `proportions`.
    """
    seen: dict[tuple[Any, Any], int] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return number, (f"undecodable bytes (not UTF-8) at byte {exc.start + 1} of the line; "
                                "lm-eval writes UTF-8, so the file was damaged or written by another tool")
            if not line.strip():
                continue
            problem = _line_problem(line, proportions or {})
            if problem is None:
                value = load_json(line)
                key = (value.get("doc_id"), value.get("filter"))
                if key in seen:
                    problem = (f"doc_id {key[0]!r} (filter {key[1]!r}) appears again (first on line {seen[key]}); "
                               "each doc is logged once per filter")
                seen.setdefault(key, number)
            if problem is not None:
                return number, problem
    return None


def _line_problem(line: str, proportions: Mapping[str, bool]) -> str | None:
    """What is wrong with one line's JSON or its logged metric values (None: nothing)."""
    try:
        value = load_json(line)
    except json.JSONDecodeError as exc:
        return f"invalid JSON ({exc.msg} at column {exc.colno})"
    except ValueError as exc:  # nested past captrack.bounded's limit
        return f"invalid JSON ({exc})"
    if not isinstance(value, dict):
        return "not a JSON object"
    for metric, proportion in proportions.items():
        number = _as_number(value.get(metric))
        if number is None:
            continue
        if not math.isfinite(number):
            return (f"{metric} is {value.get(metric)!r}, not a finite number; "
                    "an item that could not be scored is logged as null")
        if proportion and not 0.0 <= number <= 1.0:
            return (f"{metric} is {value.get(metric)!r}, outside [0, 1]; {metric} is a proportion "
                    "(its MetricSpec kind is binary or score)")
    return None


def _as_number(raw: Any) -> float | None:
    """A logged value as ingest reads it (bools and numeric strings too); None: not a number."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return float(raw)
    if isinstance(raw, str) and raw.strip().lower() not in ("true", "false"):
        try:
            return float(raw)
        except ValueError:
            return None
    return None


def samples_error(paths: list[Path], exc: Exception, proportions: dict[str, bool]) -> InputError:
    """Name the file and line DuckDB choked on (found by a plain scan, only on this error path)."""
    for path in paths:
        bad = first_bad_line(path, proportions)
        if bad is not None:
            line, problem = bad
            return InputError(
                f"{path}, line {line}: {problem}. The samples file is corrupt, truncated or not as lm-eval "
                "writes it; fix it or re-run the evaluation with --log_samples (nothing was ingested)."
            )
    names = ", ".join(str(p) for p in paths)
    return InputError(f"cannot read samples file(s) {names}: {exc} (nothing was ingested)")
