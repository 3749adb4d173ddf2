"""Several lm-eval processes against one server (``serve: {server: vllm, parallel: N}``): lm-eval prepares and tokenises
its requests on one core before it sends them, so one client leaves a served model idle much of the time.

:func:`evaluate_in_groups` splits the selected tasks (lm-eval's names: a group stays whole) into N groups of
consecutive names, evaluates each in a child process of its own (forked, so lm-eval and the task index are imported once;
it dies with this one), each with a request cache of its own (``<cache>-group<i>of<N>``: SQLite has one writer at a time),
and merges their run folders into the one folder a single process writes: one results file (per-task tables in the
single run's order, the earliest group's date) and one samples file per task, the same rows.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from captrack.errors import CaptrackError

if TYPE_CHECKING:
    from captrack.lmeval.evaluate import EvalSpec

__all__ = ["PER_TASK_KEYS", "evaluate_in_groups", "group_cache", "merge_runs", "split_tasks"]

PER_TASK_KEYS = ("results", "groups", "group_subtasks", "configs", "versions", "n-shot", "higher_is_better",
                 "n-samples", "task_hashes")
"""A results file's tables keyed by task (or group) name: merged; every other key is the run's and taken once."""


def split_tasks(names: Sequence[str], parts: int) -> list[list[str]]:
    """`names` in `parts` groups of consecutive names, sizes differing by at most one (no empty group)."""
    parts = max(1, min(parts, len(names)))
    size, extra = divmod(len(names), parts)
    groups, start = [], 0
    for index in range(parts):
        end = start + size + (1 if index < extra else 0)
        groups.append(list(names[start:end]))
        start = end
    return groups


def group_cache(cache_path: Path | None, index: int, parts: int) -> Path | None:
    """Group `index`'s request cache (a file of its own beside the checkpoint's)."""
    return None if cache_path is None else cache_path.with_name(f"{cache_path.name}-group{index}of{parts}")


def _spec_for(spec: EvalSpec, tasks: list[str]) -> EvalSpec:
    samples = {t: v for t, v in spec.samples.items() if t in tasks} if spec.samples else None
    return replace(spec, tasks=tasks, samples=samples or None)


def evaluate_in_groups(spec: EvalSpec, output_path: Path, cache_path: Path | None, parallel: int) -> Path:
    """Evaluate `spec` as `parallel` lm-eval processes (see the module) and return the merged results file.

    Raises:
        CaptrackError: a group's process failed (its exit status; its output is in this job's log).
    """
    import multiprocessing

    from captrack.lmeval.evaluate import evaluate_checkpoint, match_tasks

    _, names = match_tasks(spec.tasks, spec.metadata)  # the task index, built once here, is the children's too
    groups = split_tasks(names, parallel)
    if len(groups) == 1:
        return evaluate_checkpoint(spec, output_path, cache_path)
    work = output_path.with_name(f".{output_path.name}.groups")
    shutil.rmtree(work, ignore_errors=True)
    children = []
    for index, tasks in enumerate(groups):
        print(f"task group {index + 1}/{len(groups)}: {', '.join(tasks)}", flush=True)
        child = multiprocessing.get_context("fork").Process(
            target=_run_group, args=(os.getpid(), _spec_for(spec, tasks), work / f"group{index}",
                                     group_cache(cache_path, index, len(groups))), name=f"task group {index + 1}")
        child.start()
        children.append(child)
    try:
        for child in children:
            child.join()
    finally:
        for child in children:
            if child.is_alive():
                child.kill()
                child.join()
    failed = [f"group {i + 1} ({', '.join(groups[i])}): exit status {child.exitcode}"
              for i, child in enumerate(children) if child.exitcode]
    if failed:
        raise CaptrackError(f"{len(failed)} of {len(groups)} served task groups failed: {'; '.join(failed)}; their "
                            "output is in this job's log")
    merged = merge_runs([work / f"group{index}" for index in range(len(groups))], output_path,
                        {"use_cache": str(cache_path) if cache_path else None})
    shutil.rmtree(work, ignore_errors=True)
    return merged


def _run_group(parent: int, spec: EvalSpec, out: Path, cache: Path | None) -> None:
    """A group's process (forked: lm-eval and the task index already imported): ends with `parent`, however it ends."""
    from captrack.lmeval.evaluate import evaluate_checkpoint
    from captrack.processes import die_with_parent

    die_with_parent(parent)
    started = time.monotonic()
    evaluate_checkpoint(spec, out, cache)
    print(f"task group {spec.tasks[0]}..: done in {time.monotonic() - started:.0f} s", flush=True)


def merge_runs(folders: Sequence[Path], output_path: Path, config: dict[str, Any] | None = None) -> Path:
    """Merge the run folders lm-eval wrote under each of `folders` (one run each, disjoint tasks, in the order of the
    task list) into `output_path`: one results file, dated as the earliest run, whose per-task tables hold the runs'
    rows in the order of `folders` and whose other keys are the first run's (its ``config`` updated with `config`), and
    the runs' samples files beside it. Returns the merged results file."""
    from captrack.files import write_atomic
    from captrack.results.runfiles import results_files, results_path_of, samples_path

    runs = [(path, json.loads(path.read_text(encoding="utf-8"))) for folder in folders
            for path in sorted(results_files(folder))]
    first_path, merged = runs[0][0], dict(runs[0][1])
    for key in PER_TASK_KEYS:
        if any(key in data for _, data in runs):
            merged[key] = {name: value for _, data in runs for name, value in (data.get(key) or {}).items()}
    merged.setdefault("config", {}).update(config or {})
    merged["total_evaluation_time_seconds"] = str(max(float(d.get("total_evaluation_time_seconds") or 0) for _, d in runs))
    date = min(path.stem.split("_", 1)[1] for path, _ in runs)
    target = results_path_of(output_path / first_path.parent.relative_to(folders[0]), date)
    target.parent.mkdir(parents=True, exist_ok=True)
    for path, data in runs:
        for task in data.get("configs") or {}:
            shutil.copyfile(samples_path(path, task), samples_path(target, task))
    write_atomic(target, json.dumps(merged, indent=2, default=str, ensure_ascii=False))
    return target
