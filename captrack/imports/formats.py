"""Adapters from generations made elsewhere to replay records, one per `captrack import --format`.

- ``mmlu-pro``: the MMLU-Pro authors' ``model_outputs_<model>_5shots`` files (a JSON list, or a zip
  holding one): ``question_id`` -> the document ``mmlu_pro-<question_id>``, ``generated_text`` the
  response. Default task ``captrack_mmlu_pro_full``. The files keep no prompt.
- ``captrack``: CapTrack's ``model_responses/<model>/`` folder (SRC is the ``<model>`` folder), one file
  per task named after the config or the task (``gsm8k.subset.jsonl``, ``captrack_gsm8k_subset.parquet``),
  as JSON Lines, Parquet or CSV, with ``id`` (or ``doc_id``), the response column (``outputs``) and
  optionally ``prompt``.
- ``jsonl``: one JSON object a line with ``id`` (the document's own id, e.g. ``HumanEval-0``) or
  ``doc_id`` (lm-eval's integer index), or both (as `captrack tasks --export` writes them: they must name the
  same document), ``response`` and optionally ``prompt``; needs ``--task``.

Other tools' logs (each in its own module of this package, registered with ``@adapter(``): NeMo Evaluator
runs (``nemo``), Inspect ``.eval`` logs (``inspect``), lighteval details (``lighteval``) and
Every-Eval-Ever ``_samples.jsonl`` (``every-eval-ever``). Their adapters fill ``Source.outcomes`` (the
tool's own per-item verdicts, see :mod:`captrack.imports.tool_outcomes`) and, where the items are lm-eval's or
captrack's, ``Source.records`` too (the responses, for ``--rescore``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import ReplayRecord
from captrack.bounded import load_json
from captrack.errors import InputError, UnknownNameError
from captrack.imports.reading import (
    decode,
    doc_index,
    read_bytes,
    read_zip_member,
    response_text,
    table_rows,
    text_id,
)
from captrack.imports.tool_outcomes import Outcome
from captrack.registries import Registry

__all__ = ["ADAPTERS", "MMLU_PRO_TASK", "ReadOptions", "Source", "adapter", "read_source"]

MMLU_PRO_TASK = "captrack_mmlu_pro_full"
TABLE_SUFFIXES = (".jsonl", ".parquet", ".csv")


@dataclass(frozen=True)
class Source:
    """What an adapter read: the records, the model name the source suggests, and the SHA-256 of the bytes parsed.

    Another tool's log also gives `outcomes` (its own per-item verdicts) and `note`, what those values are.
    `name_from` says where `name` came from, for a refusal of it (``config.model in .../eval-1.json``; empty: the
    source's own name).
    """

    records: list[ReplayRecord]
    name: str
    sha256: str = ""
    outcomes: list[Outcome] = field(default_factory=list)
    note: str = ""
    name_from: str = ""


@dataclass(frozen=True)
class ReadOptions:
    """How to read a source: the response column of CapTrack files; which of the tool's per-item metrics
    (an Inspect scorer, a lighteval metric, an Every-Eval-Ever result id) to take as the outcome; whether a log the
    tool itself marks unfinished (an Inspect log with status error or cancelled) may be imported (`--allow-partial`)."""

    response_column: str = "outputs"
    outcome: str | None = None
    allow_partial: bool = False


Adapter = Callable[[Path, "str | None", ReadOptions], Source]
ADAPTERS: Registry[Adapter] = Registry("import format", scan="captrack.imports", marker="@adapter(")
"""The reader of each ``--format``: registered with ``@adapter(`` lines in the modules of captrack.imports."""


def adapter(name: str) -> Callable[[Adapter], Adapter]:
    """Register the reader of one `--format`."""
    return ADAPTERS.register(name)


def read_source(fmt: str, src: Path, task: str | None, options: ReadOptions | None = None) -> Source:
    """Read `src` in format `fmt` into replay records (for `task` only, when given).

    Raises:
        UnknownNameError: an unknown format.
        InputError: the source is missing or malformed (file, line and field named).
    """
    read = ADAPTERS.get(fmt)
    if not src.exists():
        raise InputError(f"{src}: no such file or folder")
    return read(src, task, options or ReadOptions())


def _record(where: str, task: str, row: Mapping[str, Any], response_key: str) -> ReplayRecord:
    """One record from a row with ``id`` or ``doc_id`` (or both, checked against each other when matched), the response
    and an optional prompt (types checked, see reading)."""
    if response_key not in row:
        raise InputError(f"{where}: no {response_key!r} field (fields: {', '.join(map(str, row))})")
    response = response_text(where, response_key, row[response_key])
    has_id, has_index = row.get("id") not in (None, ""), row.get("doc_id") not in (None, "")
    if not has_id and not has_index:
        raise InputError(f"{where}: no 'id' (the document's own id) or 'doc_id' (lm-eval's index); give one, or keep "
                         "both as `captrack tasks --export` writes them")
    prompt = row.get("prompt")
    if prompt not in (None, "") and not isinstance(prompt, str):
        raise InputError(f"{where}: 'prompt' is {type(prompt).__name__}; give the prompt as a string (or leave it out)")
    return ReplayRecord(task=task, response=response, id=text_id(where, row["id"]) if has_id else None,
                        doc_id=doc_index(where, row["doc_id"]) if has_index else None,
                        prompt=None if prompt in (None, "") else str(prompt))


@adapter("jsonl")
def read_jsonl(src: Path, task: str | None, options: ReadOptions) -> Source:
    """A generic JSON Lines file: ``id`` or ``doc_id``, ``response``, optional ``prompt``."""
    if task is None:
        raise InputError(f"{src}: --format jsonl needs --task (the captrack task its ids belong to)")
    if not src.is_file():
        raise InputError(f"{src}: --format jsonl expects a file")
    source = read_bytes(src)
    records = [_record(where, task, row, "response") for where, row in table_rows(source, ".jsonl")]
    return Source(records, src.stem, source.sha256, name_from=f"the file name {src.name!r}")


def _mmlu_pro_items(src: Path) -> tuple[list[dict[str, Any]], str]:
    """The list of dicts in an MMLU-Pro outputs JSON file, or in the one JSON file of a zip, and the SHA-256 read."""
    source = read_zip_member(src, ".json")[0] if src.suffix == ".zip" else read_bytes(src)
    text = decode(source)
    try:
        items = load_json(text)
    except ValueError as exc:
        raise InputError(f"{source.where}: not JSON ({exc}); expected MMLU-Pro's model_outputs list") from exc
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise InputError(f"{source.where}: expected a JSON list of objects (MMLU-Pro's model_outputs file)")
    return items, source.sha256


@adapter("mmlu-pro")
def read_mmlu_pro(src: Path, task: str | None, options: ReadOptions) -> Source:
    """MMLU-Pro's published outputs: ``question_id`` and ``generated_text`` of every item."""
    if not src.is_file():
        raise InputError(f"{src}: --format mmlu-pro expects a model_outputs_*.json or .zip file")
    target = task or MMLU_PRO_TASK
    records = []
    items, sha256 = _mmlu_pro_items(src)
    for i, item in enumerate(items):
        where = f"{src} item {i}"
        if "question_id" not in item:
            raise InputError(f"{where}: no 'question_id'")
        question = doc_index(f"{where}: question_id", item["question_id"])
        records.append(_record(where, target, {"id": f"mmlu_pro-{question}", **_no_id(item)}, "generated_text"))
    name = re.sub(r"^model_outputs_|_\d+shots$", "", src.stem)
    return Source(records, name, sha256, name_from=f"the file name {src.name!r}")


def _no_id(item: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k not in ("id", "doc_id", "prompt")}


def _task_of(path: Path) -> str:
    """The captrack task a model_responses file stands for: its name is the config or the task."""
    from captrack.official.configs import get_config

    stem = path.name.removesuffix(path.suffix)
    return stem if stem.startswith("captrack_") else get_config(stem).task


@adapter("captrack")
def read_captrack(src: Path, task: str | None, options: ReadOptions) -> Source:
    """CapTrack's ``model_responses/<model>/``: one file per task, response column ``outputs``."""
    if not src.is_dir():
        raise InputError(f"{src}: --format captrack expects the folder model_responses/<model>/")
    files = sorted(p for p in src.iterdir() if p.suffix in TABLE_SUFFIXES and p.is_file())
    if not files:
        raise InputError(f"{src}: no task files (<config or task>{'|'.join(TABLE_SUFFIXES)}); point at model_responses/<model>/")
    by_task: dict[str, Path] = {}
    for path in files:
        name = _task_of(path)
        if name in by_task:
            raise InputError(f"{src}: task {name} has two files, {by_task[name].name} and {path.name}; keep one")
        by_task[name] = path
    if task is not None:
        if task not in by_task:
            raise UnknownNameError(f"task file in {src}", task, by_task)
        by_task = {task: by_task[task]}
    records, digest = [], hashlib.sha256()
    for name, path in sorted(by_task.items(), key=lambda item: item[1].name):
        source = read_bytes(path)
        digest.update(f"{path.name}\t{source.sha256}\n".encode())
        records += [_record(where, name, row, options.response_column) for where, row in table_rows(source, path.suffix)]
    return Source(records, src.name, digest.hexdigest(), name_from=f"the folder name {src.name!r}")
