"""``captrack import --format nemo``: NeMo Evaluator (``nel eval``) runs.

NeMo Evaluator 0.3.0 writes one folder per benchmark: ``eval-<run_id>.json`` (the bundle: ``benchmark.name``,
``config.model``, ``n_results``, headline scores) and ``results.jsonl``, one line per (problem, repeat):
``problem_idx``, ``repeat``, ``reward``, ``prompt``, ``model_response``, ``expected_answer``, ...
SRC is such a folder, or a folder holding several (a model's run: ``<model>/<benchmark>/``).

Items are identified by ``problem_idx``; ``repeat`` becomes the replicate; ``reward`` is the outcome (NeMo
itself counts ``reward > 0`` as correct; a null reward is unscored). The task is the benchmark's name
(``lm-eval://TASK`` -> ``TASK``). With ``--rescore`` the responses are scored again by the captrack task of
that name, ``problem_idx`` taken as lm-eval's doc index (right for ``lm-eval://`` benchmarks run without
shuffling: nel's ``config_hash`` covers ``max_problems`` and ``shuffle_seed``).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.imports.formats import ReadOptions, Source, adapter
from captrack.imports.reading import decode, doc_index, read_bytes, table_rows
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_nemo"]

NOTE = "NeMo Evaluator's own reward per (problem_idx, repeat), as results.jsonl reports it"
MAX_INDEX = 2**63 - 1  # the store's doc_id is a BIGINT
MAX_REPEAT = 2**31 - 2  # the store's replicate is an INTEGER


def _bounded(where: str, key: str, value: Any, most: int) -> int:
    """A ``problem_idx`` or ``repeat``: a non-negative integer the store can hold.

    Raises:
        InputError: not a non-negative integer, or above `most`.
    """
    number = doc_index(f"{where}: {key}", value)
    if number > most:
        raise InputError(f"{where}: {key} {number} is larger than captrack's store holds (at most {most}); "
                         "not an index NeMo Evaluator writes: check the file; nothing was written")
    return number


def _n_results(path: Path, value: Any) -> int | None:
    """The bundle's ``n_results`` as a count (``20``, ``20.0`` or ``"20"``); None when the bundle has none.

    Raises:
        InputError: a boolean, a fraction, a negative number, other text, a list or an object.
    """
    if value is None:
        return None
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        text = str(value).strip()
        number = float(text) if isinstance(value, float) else int(text) if text.isdigit() else None
        if number is not None and float(number).is_integer() and number >= 0:
            return int(number)
    raise InputError(f"{path}: n_results {value!r} is not a count of results (a non-negative integer); "
                     "the bundle is damaged or not NeMo Evaluator's; nothing was written")


def _text(value: Any) -> str:
    return "" if value is None else value if isinstance(value, str) else str(value)


def _bundle(folder: Path) -> tuple[dict[str, Any], str, Path]:
    """The benchmark folder's ``eval-*.json``, its SHA-256 and its path.

    Raises:
        InputError: none or several, or not a JSON object with ``benchmark.name``.
    """
    found = sorted(folder.glob("eval-*.json"))
    if len(found) != 1:
        raise InputError(f"{folder}: expected one eval-*.json beside results.jsonl (NeMo Evaluator's bundle), "
                         f"found {[p.name for p in found] or 'none'}")
    source = read_bytes(found[0])
    try:
        bundle = load_json(decode(source))
    except ValueError as exc:
        raise InputError(f"{found[0]}: not JSON ({exc}); the bundle is truncated or not NeMo Evaluator's") from exc
    if not isinstance(bundle, dict) or not isinstance((bundle.get("benchmark") or {}).get("name"), str):
        raise InputError(f"{found[0]}: no benchmark.name; not a NeMo Evaluator eval-*.json bundle")
    return bundle, source.sha256, found[0]


def _task_name(bundle: dict[str, Any]) -> str:
    name = str(bundle["benchmark"]["name"]).removeprefix("lm-eval://").strip()
    return name.replace("/", "_").replace("\\", "_")


def _read_folder(folder: Path, digest: Any) -> tuple[list[Outcome], str, str, Path]:
    """One benchmark folder's outcomes, its task, the model its bundle names and the bundle's path."""
    bundle, bundle_sha, bundle_path = _bundle(folder)
    task = _task_name(bundle)
    source = read_bytes(folder / "results.jsonl")
    digest.update(f"{folder.name}\t{bundle_sha}\t{source.sha256}\n".encode())
    outcomes = []
    for where, row in table_rows(source, ".jsonl"):
        for key in ("problem_idx", "reward"):
            if key not in row:
                raise InputError(f"{where}: no {key!r} (fields: {', '.join(map(str, row))}); not a NeMo Evaluator result")
        index = _bounded(where, "problem_idx", row["problem_idx"], MAX_INDEX)
        outcomes.append(Outcome(task, str(index), _bounded(where, "repeat", row.get("repeat", 0), MAX_REPEAT),
                                outcome_value(f"{where}: reward", row["reward"]), index,
                                _text(row.get("model_response")), _text(row.get("prompt")),
                                _text(row.get("expected_answer")),
                                {"extracted_answer": _text(row.get("extracted_answer"))}))
    expected = _n_results(bundle_path, bundle.get("n_results"))
    if expected is not None and expected != len(outcomes):
        raise InputError(f"{folder}/results.jsonl: {len(outcomes)} results, but its bundle says n_results {expected}; "
                         "the file is truncated (or from another run); nothing was written")
    model = (bundle.get("config") or {}).get("model")
    return outcomes, task, str(model) if model else "", bundle_path


def _records(outcomes: list[Outcome]) -> list[ReplayRecord]:
    """The responses keyed by lm-eval's doc index, for --rescore (only a run without repeats: one response a doc)."""
    if any(o.replicate != 0 for o in outcomes):
        return []
    return [ReplayRecord(task=o.task, response=o.response, doc_id=o.index, prompt=o.prompt or None) for o in outcomes]


@adapter("nemo")
def read_nemo(src: Path, task: str | None, options: ReadOptions) -> Source:
    """NeMo Evaluator's benchmark folders: ``eval-*.json`` + ``results.jsonl`` each."""
    if not src.is_dir():
        raise InputError(f"{src}: --format nemo expects a NeMo Evaluator benchmark folder (eval-*.json + results.jsonl) "
                         "or a folder of them")
    folders = sorted(p.parent for p in src.rglob("results.jsonl"))
    if not folders:
        raise InputError(f"{src}: no results.jsonl below it; point at a `nel eval` output folder")
    outcomes: list[Outcome] = []
    models: dict[str, Path] = {}
    seen: dict[str, Path] = {}
    digest = hashlib.sha256()
    for folder in folders:
        rows, name, model, bundle = _read_folder(folder, digest)
        if name in seen:
            raise InputError(f"{src}: benchmark {name} appears twice ({seen[name]} and {folder}); import one run at a time")
        seen[name] = folder
        models.setdefault(model, bundle)
        outcomes += rows
    if len(models) == 1 and "" not in models:
        model, origin = next(iter(models)), f"config.model in {next(iter(models.values()))}"
    else:
        model, origin = src.name, f"the folder name {src.name!r}, its bundles naming {len(models)} models"
    return Source(_records(outcomes), model.replace("/", "__"), digest.hexdigest(), outcomes, NOTE, origin)
