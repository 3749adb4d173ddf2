"""``captrack import --format every-eval-ever``: Every-Eval-Ever instance-level logs (``<uuid>_samples.jsonl``).

Every-Eval-Ever (the ``every_eval_ever`` package, schema ``instance_level_eval``) keeps one JSON line per
(sample, aggregate result): ``evaluation_name`` (the task), ``evaluation_result_id`` (which result the row
counts toward: a metric and filter), ``sample_id``, ``sample_hash`` (of input and reference),
``input.raw``, ``input.reference``, ``output.raw`` (the responses), ``evaluation.score`` and
``evaluation.is_correct``; its Inspect converter puts the epoch in ``metadata.epoch``. SRC is one such
file, or a folder of them.

Items are identified by ``sample_id`` within a task (``sample_hash`` is kept beside it); ``metadata.epoch``
(1, 2, ...) becomes the replicate, else 0. The outcome is ``evaluation.score`` of each task's first result
id (``--outcome RESULT_ID`` picks another). With ``--rescore`` the first response is scored again by the
captrack task named by ``--task`` (or the evaluation name), an integral ``sample_id`` taken as lm-eval's doc
index (what Every-Eval-Ever's lm-eval converter writes), another as the document's id.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.errors import InputError
from captrack.imports.formats import ReadOptions, Source, adapter
from captrack.imports.reading import read_bytes, table_rows, text_id
from captrack.imports.tool_outcomes import Outcome, outcome_value

__all__ = ["read_every_eval_ever"]


def _field(where: str, row: dict[str, Any], key: str) -> Any:
    if key not in row:
        raise InputError(f"{where}: no {key!r} (fields: {', '.join(map(str, row))}); not an Every-Eval-Ever instance log")
    return row[key]


def _replicate(where: str, row: dict[str, Any]) -> int:
    epoch = (row.get("metadata") or {}).get("epoch")
    if epoch in (None, ""):
        return 0
    text = str(epoch).strip()
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{where}: metadata.epoch {epoch!r} is not a positive integer")
    return int(text) - 1


def _texts(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    return [] if value is None else [str(value)]


def _rows(path: Path, options: ReadOptions, chosen: dict[str, str], order: dict[str, dict[str, int]]) -> list[Outcome]:
    source = read_bytes(path)
    outcomes = []
    for where, row in table_rows(source, ".jsonl"):
        task = str(_field(where, row, "evaluation_name")).replace("/", "_").replace("\\", "_")
        result = str(row.get("evaluation_result_id") or "")
        if chosen.setdefault(task, options.outcome or result) != result:
            continue
        item = text_id(f"{where}: sample_id", _field(where, row, "sample_id"))
        evaluation = _field(where, row, "evaluation")
        if not isinstance(evaluation, dict) or "score" not in evaluation:
            raise InputError(f"{where}: 'evaluation' has no 'score'")
        inputs = row.get("input") or {}
        positions = order.setdefault(task, {})
        index = positions.setdefault(item, len(positions))
        outcomes.append(Outcome(task, item, _replicate(where, row), outcome_value(f"{where}: evaluation.score", evaluation["score"]),
                                index, (_texts((row.get("output") or {}).get("raw")) or [""])[0],
                                str(inputs.get("raw") or ""), " | ".join(_texts(inputs.get("reference"))),
                                {"sample_hash": str(row.get("sample_hash") or ""), "result": result}))
    return outcomes


def _record(task: str, o: Outcome) -> ReplayRecord:
    if o.item.isdigit():
        return ReplayRecord(task=task, response=o.response, doc_id=int(o.item), prompt=o.prompt or None)
    return ReplayRecord(task=task, response=o.response, id=o.item, prompt=o.prompt or None)


@adapter("every-eval-ever")
def read_every_eval_ever(src: Path, task: str | None, options: ReadOptions) -> Source:
    """Every-Eval-Ever ``_samples.jsonl``: items by ``sample_id``, ``evaluation.score`` the outcome."""
    files = sorted(src.glob("*_samples.jsonl")) if src.is_dir() else [src]
    if not files:
        raise InputError(f"{src}: no *_samples.jsonl files (Every-Eval-Ever's instance-level logs)")
    outcomes: list[Outcome] = []
    chosen: dict[str, str] = {}
    order: dict[str, dict[str, int]] = {}
    digest = hashlib.sha256()
    for path in files:
        digest.update(f"{path.name}\t{read_bytes(path).sha256}\n".encode())
        outcomes += _rows(path, options, chosen, order)
    if options.outcome and not outcomes:
        raise InputError(f"{src}: no rows with evaluation_result_id {options.outcome!r}")
    models = _models(files)
    if len(models) == 1 and "" not in models:
        name, origin = next(iter(models)), f"model_id in {next(iter(models.values()))}"
    else:
        named = f", its logs naming {len(models)} models" if len(models) > 1 else ""
        name, origin = src.stem, f"the file name {src.name!r}{named}"
    records = [] if any(o.replicate for o in outcomes) else [_record(task or o.task, o) for o in outcomes]
    results = ", ".join(f"{t}: {r or '(none)'}" for t, r in sorted(chosen.items()))
    note = f"Every-Eval-Ever's evaluation.score per (sample_id, epoch), result ids {results}"
    return Source(records, name.replace("/", "__"), digest.hexdigest(), outcomes, note, origin)


def _models(files: list[Path]) -> dict[str, Path]:
    """The model_id of each file's first row ("" where it has none), with the first file naming it."""
    found: dict[str, Path] = {}
    for path in files:
        for _, row in table_rows(read_bytes(path), ".jsonl"):
            found.setdefault(str(row.get("model_id") or ""), path)
            break
    return found
