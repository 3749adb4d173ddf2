"""Per-item texts and per-choice loglikelihoods, read back from the samples files the store recorded.

The store holds numbers; prompts, gold answers, responses and per-option loglikelihoods stay in
lm-eval's ``samples_<task>_<date>.jsonl`` files. The store records which file (and its SHA-256)
each run's task came from; these functions read that file, and refuse one that changed since ingest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import pandas as pd

from captrack.errors import InputError
from captrack.results.runfiles import file_sha256
from captrack.results.store import SamplesFile, Store

if TYPE_CHECKING:
    from captrack.results.pairing import PairedItems

__all__ = ["ItemText", "paired_doc_field", "read_choice_rows", "read_doc_field", "read_item_texts", "unavailable_reason"]

_MAX_OBJECT = 1 << 30


@dataclass(frozen=True)
class ItemText:
    """What a page shows of one item: the prompt, the gold answer and the model's response."""

    prompt: str
    gold: str
    response: str


@lru_cache(maxsize=512)
def _sha256(path: str, mtime_ns: int, size: int) -> str:
    return file_sha256(Path(path))


def unavailable_reason(file: SamplesFile) -> str | None:
    """Why `file` cannot be read back (gone, or changed since ingest), else None."""
    if not file.path.is_file():
        return f"samples file {file.path} is gone"
    if file.sha256 is not None:
        stat = file.path.stat()
        if _sha256(str(file.path), stat.st_mtime_ns, stat.st_size) != file.sha256:
            return f"samples file {file.path} changed since it was ingested"
    return None


def read_item_texts(file: SamplesFile, doc_ids: list[int]) -> dict[int, ItemText]:
    """Prompt, gold and response of the given docs; empty when the file is unavailable (see unavailable_reason)."""
    if not doc_ids or unavailable_reason(file) is not None:
        return {}
    rows = duckdb.execute(
        f"""SELECT doc_id, target, arguments, filtered_resps
        FROM read_json(?, format='newline_delimited',
                       columns={{'doc_id': 'BIGINT', 'target': 'JSON', 'arguments': 'JSON', 'filtered_resps': 'JSON'}},
                       maximum_object_size={_MAX_OBJECT})
        WHERE doc_id IN (SELECT unnest(?::BIGINT[]))""",
        [str(file.path), doc_ids],
    ).fetchall()
    return {int(doc_id): _text(target, arguments, resps) for doc_id, target, arguments, resps in rows}


def read_choice_rows(file: SamplesFile) -> pd.DataFrame:
    """Per logged row of a multiple-choice samples file: doc_id, doc_hash, filter, occ, target, filtered_resps (JSON text).

    ``occ`` numbers repeated documents (same doc_hash) in doc_id order, as pairing does. Empty when unavailable.
    """
    columns = ["doc_id", "doc_hash", "filter", "occ", "target", "filtered_resps"]
    if unavailable_reason(file) is not None:
        return pd.DataFrame(columns=columns)
    return duckdb.execute(
        f"""SELECT doc_id, doc_hash, "filter", row_number() OVER (PARTITION BY "filter", doc_hash ORDER BY doc_id) AS occ,
                   target, filtered_resps
        FROM read_json(?, format='newline_delimited', maximum_object_size={_MAX_OBJECT},
                       columns={{'doc_id': 'BIGINT', 'doc_hash': 'VARCHAR', 'filter': 'VARCHAR',
                                'target': 'JSON', 'filtered_resps': 'JSON'}})
        ORDER BY doc_id""",
        [str(file.path)],
    ).df()[columns]


def _text(target: Any, arguments: Any, resps: Any) -> ItemText:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
    gold = json.loads(target) if isinstance(target, str) else target
    filtered = json.loads(resps) if isinstance(resps, str) else resps or []
    requests = [args[k] for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1]))]
    prompt = str(requests[0].get("arg_0", "")) if requests else ""
    is_choice = len(requests) > 1 and all(isinstance(r, list) and len(r) == 2 for r in filtered)
    if is_choice:
        choices = [str(r.get("arg_1", "")) for r in requests]
        scores = [float(r[0]) for r in filtered]
        response = choices[max(range(len(scores)), key=scores.__getitem__)]
        if isinstance(gold, int) and 0 <= gold < len(choices):
            gold = choices[gold]
        prompt += "\n\nOptions: " + " | ".join(c.strip() for c in choices)
    else:
        response = filtered[0] if isinstance(filtered, list) and filtered else filtered
    return ItemText(prompt, str(gold), str(response))


def read_doc_field(file: SamplesFile, name: str) -> dict[int, str | None]:
    """doc_id -> the value of doc field `name` (at the doc's top level, else in its ``meta``); None where absent.

    Raises:
        InputError: the file is gone or changed since ingest.
    """
    reason = unavailable_reason(file)
    if reason is not None:
        raise InputError(f"{reason}; cannot read doc field {name!r} (re-ingest the run)")
    path = '$."' + name.replace('"', '') + '"'
    rows = duckdb.execute(
        f"""SELECT doc_id, coalesce(json_extract_string(doc, ?),
                   CASE WHEN json_valid(doc ->> 'meta') THEN json_extract_string(doc ->> 'meta', ?) END)
        FROM read_json(?, format='newline_delimited', columns={{'doc_id': 'BIGINT', 'doc': 'JSON'}},
                       maximum_object_size={_MAX_OBJECT})""",
        [path, path, str(file.path)],
    ).fetchall()
    return {int(doc_id): value for doc_id, value in rows}


def paired_doc_field(store: Store, paired: PairedItems, name: str) -> pd.Series:
    """Per row of ``paired.items`` (same index), doc field `name` of the item as the base's samples log shows it.

    Raises:
        InputError: a samples file is missing from the store, gone, or changed since ingest.
    """
    files = store.samples_files(paired.base)
    values = pd.Series(None, index=paired.items.index, dtype=object)
    for (run_id, task), index in paired.items.groupby(["base_run", "task"]).groups.items():
        file = files.get((str(run_id), str(task)))
        if file is None:
            raise InputError(f"run {run_id} of {paired.base!r} has no samples file for task {task}; re-ingest it")
        found = read_doc_field(file, name)
        values.loc[index] = [found.get(int(i)) for i in paired.items.loc[index, "doc_id"]]
    return values
