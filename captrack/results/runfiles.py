"""Find and describe lm-eval runs on disk: results_*.json plus samples_<task>_*.jsonl."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.errors import InputError

__all__ = ["Run", "TaskInfo", "discover_runs", "file_sha256", "first_bad_line", "judged_path", "samples_path"]


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


def samples_path(results_path: Path, task: str) -> Path:
    """lm-eval's per-sample log of `task` beside a results file: ``samples_<task>_<date>.jsonl``."""
    return results_path.with_name(f"samples_{task}_{results_path.stem.removeprefix('results_')}.jsonl")


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
        raw_bytes = results_path.read_bytes()
        data = json.loads(raw_bytes)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{results_path}: not a readable lm-eval results file: {exc}") from exc
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


def first_bad_line(path: Path) -> tuple[int, str] | None:
    """Return (line number, problem) of the first line that is not a JSON object, else None."""
    with path.open("rb") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                return number, f"invalid JSON ({exc.msg} at column {exc.colno})"
            if not isinstance(value, dict):
                return number, "not a JSON object"
    return None
