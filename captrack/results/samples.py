"""Per-item texts and per-choice loglikelihoods, read back from the samples files the store recorded.

The store holds numbers; prompts, gold answers, responses and per-option loglikelihoods stay in
lm-eval's ``samples_<task>_<date>.jsonl`` files. The store records which file (and its SHA-256)
each run's task came from; these functions read that file, and refuse one that changed since ingest.
"""

from __future__ import annotations

import ast
import json
import re
import string
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
import pandas as pd

from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.results.runfiles import file_digest, file_sha256
from captrack.results.store import SamplesFile, Store

if TYPE_CHECKING:
    from captrack.results.pairing import PairedItems

__all__ = [
    "GOLD_FIELDS", "ItemText", "gold_text", "option_list", "paired_doc_field", "read_doc_field", "read_item_texts",
    "read_many_item_texts", "read_paired_choices", "unavailable_reason",
]

_MAX_OBJECT = 1 << 30


@dataclass(frozen=True)
class ItemText:
    """What a page shows of one item: the prompt, the gold answer as text, the model's response, the
    item's options (empty for free-form answers) and the logged doc (for scorers' extraction helpers).

    ``gold`` is "B. Paris" for an option given by index or letter, the option itself when the gold is
    its text (yes / no), else the target lm-eval logged, else the doc's reference field
    (``gold``, ``answer``, else a named :data:`GOLD_FIELDS` one: "call: {...}"); "" only when the doc
    holds no reference at all.
    """

    prompt: str
    gold: str
    response: str
    options: tuple[str, ...] = ()
    doc: Mapping[str, Any] = field(default_factory=dict)

    def __reduce__(self) -> tuple[type[ItemText], tuple[Any, ...]]:
        """Pickled as its fields (a comparison's worker processes send thousands back): unpickles faster."""
        return (ItemText, (self.prompt, self.gold, self.response, self.options, self.doc))


# Doc fields that hold what a generation item expects, in the order they are looked for (official rows:
# gold; generated probes: answer, a tool call, records to format, points to cover, sources to cite, ...).
GOLD_FIELDS = ("gold", "answer", "call", "records", "points", "support", "constraints", "claims")


@lru_cache(maxsize=1 << 16)  # keyed by (path, mtime, size): a file is hashed once per change, however many pairs read it
def _digest(path: str, mtime_ns: int, size: int, sha256: bool) -> str:
    return file_sha256(Path(path)) if sha256 else file_digest(Path(path))


def unavailable_reason(file: SamplesFile) -> str | None:
    """Why `file` cannot be read back (gone, or changed since ingest), else None."""
    if not file.path.is_file():
        return f"samples file {file.path} is gone"
    if file.digest is not None:
        stat = file.path.stat()
        old = ":" not in file.digest  # stores written before fingerprints recorded the bare SHA-256
        if _digest(str(file.path), stat.st_mtime_ns, stat.st_size, old) != file.digest:
            return f"samples file {file.path} changed since it was ingested"
    return None


def read_item_texts(file: SamplesFile, doc_ids: list[int]) -> dict[int, ItemText]:
    """Prompt, gold and response of the given docs; empty when the file is unavailable (see unavailable_reason)."""
    return read_many_item_texts({file: doc_ids})[file]


def read_many_item_texts(wanted: Mapping[SamplesFile, Collection[int]]) -> dict[SamplesFile, dict[int, ItemText]]:
    """Per samples file, prompt, gold and response of the given docs, each file read once (an unavailable file
    gives an empty dict, see unavailable_reason). A doc id a file logs twice (one line per filter) gives its
    last line, as the file orders them.

    Only the wanted lines are parsed: lm-eval writes each line's doc id first, so the others are told apart
    by that prefix (a line that starts otherwise is parsed to find its doc id).
    """
    out: dict[SamplesFile, dict[int, ItemText]] = {file: {} for file in wanted}
    by_path: dict[Path, set[int]] = {}
    for file, ids in wanted.items():
        if ids and unavailable_reason(file) is None:
            by_path.setdefault(file.path, set()).update(int(i) for i in ids)
    lines = {path: _wanted_lines(path, ids) for path, ids in by_path.items()}
    for file, ids in wanted.items():
        found = lines.get(file.path, {})
        out[file] = {int(i): _item_text(found[int(i)]) for i in ids if int(i) in found}
    return out


_DOC_ID = re.compile(rb'\s*\{\s*"doc_id"\s*:\s*(-?[0-9]+)\s*[,}]')


def _wanted_lines(path: Path, ids: set[int]) -> dict[int, dict[str, Any]]:
    """doc id -> the last line of `path` logging it, parsed, for the doc ids in `ids`.

    Raises:
        InputError: a wanted (or unreadable-prefix) line is not JSON, naming file and line.
    """
    found: dict[int, dict[str, Any]] = {}
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            head = _DOC_ID.match(raw)
            if head is not None and int(head[1]) not in ids:
                continue
            if head is None and not raw.strip():
                continue
            try:
                line = load_json(raw)
            except ValueError as exc:  # not JSON, or not UTF-8 (a file damaged after a store without fingerprints)
                raise InputError(f"{path}, line {number}: not a JSON line ({exc}); the samples file is damaged: "
                                 "restore it or re-run the evaluation, then ingest again") from exc
            doc_id = line.get("doc_id") if isinstance(line, dict) else None
            if isinstance(doc_id, str) and doc_id.strip().lstrip("-").isdigit():
                doc_id = int(doc_id)
            if isinstance(doc_id, int) and not isinstance(doc_id, bool) and doc_id in ids:
                found[doc_id] = line
    return found


def read_paired_choices(base: SamplesFile, variant: SamplesFile, keys: pd.DataFrame) -> list[tuple[Any, ...]]:
    """(doc_hash, target, base filtered_resps, variant filtered_resps) of the paired `keys`, JSON as text, in base doc order.

    `keys` holds the paired items' filter, doc_hash and occ (captrack.results.pairing numbers repeated
    documents in doc_id order; so does this). Empty when either file is unavailable.
    """
    if unavailable_reason(base) is not None or unavailable_reason(variant) is not None:
        return []
    ranked = f"""SELECT doc_id, doc_hash, "filter", target, filtered_resps,
               row_number() OVER (PARTITION BY "filter", doc_hash ORDER BY doc_id) AS occ
        FROM read_json(?, format='newline_delimited', maximum_object_size={_MAX_OBJECT},
                       columns={{'doc_id': 'BIGINT', 'doc_hash': 'VARCHAR', 'filter': 'VARCHAR',
                                'target': 'JSON', 'filtered_resps': 'JSON'}})"""
    con = duckdb.connect()
    try:
        con.register("_keys", keys[["filter", "doc_hash", "occ"]])
        return con.execute(
            f"""WITH b AS ({ranked}), v AS ({ranked})
            SELECT b.doc_hash, b.target, b.filtered_resps, v.filtered_resps
            FROM b JOIN v ON b.doc_hash = v.doc_hash AND b.occ = v.occ AND b."filter" = v."filter"
            JOIN _keys k ON k.doc_hash = b.doc_hash AND k.occ = b.occ AND k."filter" = b."filter"
            ORDER BY b.doc_id""",
            [str(base.path), str(variant.path)],
        ).fetchall()
    finally:
        con.close()


def option_list(value: Any) -> tuple[str, ...]:
    """A doc's options: a list, or its JSON / Python-literal text (generated probes log "['a', 'b']"); () if none."""
    if isinstance(value, str):
        text = value.strip()
        if not text.startswith("["):
            return ()
        try:
            value = load_json(text)
        except ValueError:
            try:
                value = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                return ()
    if isinstance(value, (list, tuple)) and len(value) >= 2:
        return tuple(str(v) for v in value)
    return ()


def _letter(i: int) -> str:
    return string.ascii_uppercase[i] if i < 26 else str(i)


def gold_text(target: Any, doc: Mapping[str, Any], options: tuple[str, ...]) -> str:
    """The gold answer as a reader wants it: "B. Paris" for an option index or letter, see :class:`ItemText`."""
    raw = next((v for v in (target, doc.get("gold"), doc.get("answer")) if v not in (None, "", [], {})), None)
    if options and raw is not None and not isinstance(raw, list):
        key = str(raw).strip()
        if key.isdigit() and int(key) < len(options):
            return f"{_letter(int(key))}. {options[int(key)]}"
        if len(key) == 1 and key.upper() in string.ascii_uppercase[: len(options)]:
            index = string.ascii_uppercase.index(key.upper())
            return f"{key.upper()}. {options[index]}"
        if key in options:
            return key
    if raw not in (None, "", [], {}):
        return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    for name in GOLD_FIELDS[2:]:
        value = doc.get(name)
        if value not in (None, "", "[]", [], {}):
            return f"{name}: {value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)}"
    return ""


def _item_text(line: Mapping[str, Any]) -> ItemText:
    args = line.get("arguments") or {}
    gold = line.get("target")
    filtered = line.get("filtered_resps") or []
    doc = line.get("doc") or {}
    doc = doc if isinstance(doc, dict) else {}
    requests = [args[k] for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1]))]
    prompt = str(requests[0].get("arg_0", "")) if requests else ""
    is_choice = len(requests) > 1 and all(isinstance(r, list) and len(r) == 2 for r in filtered)
    options = option_list(doc.get("choices"))
    if is_choice and _is_contrast(doc, options, len(filtered)):
        from captrack.metrics.form_consistency import contrast_metrics

        gold_index = int(doc["gold"])
        held = contrast_metrics(doc, [float(r[0]) for r in filtered])["contrast_acc"] == 1.0
        pick = gold_index if held else 1 - gold_index  # the option the probe favours more than its control does
        response = f"{_letter(pick)}. {options[pick]}"
        prompt += ("\n\nOptions: " + " | ".join(f"{_letter(i)}. {c}" for i, c in enumerate(options))
                   + "\n\nScored as a contrast: the answer shown is the option this prompt favours (loglikelihood margin "
                   "over the other option) more than its control prompt does; the control prompt:\n" + str(doc["control"]))
    elif is_choice:
        options = tuple(str(r.get("arg_1", "")).strip() for r in requests)
        scores = [float(r[0]) for r in filtered]
        best = max(range(len(scores)), key=scores.__getitem__)
        response = f"{_letter(best)}. {options[best]}"
        prompt += "\n\nOptions: " + " | ".join(f"{_letter(i)}. {c}" for i, c in enumerate(options))
    else:
        response = filtered[0] if isinstance(filtered, list) and filtered else filtered
    return ItemText(prompt, gold_text(gold, doc, options), str(response), options, doc)


def _is_contrast(doc: Mapping[str, Any], options: tuple[str, ...], n_scored: int) -> bool:
    """Whether a doc is a forced-choice contrast (captrack.probes.forced): a probe and a control context scoring
    the same two options, four loglikelihoods in all."""
    gold = doc.get("gold")
    return "control" in doc and "forms" in doc and len(options) == 2 and n_scored == 4 and gold in (0, 1)


def read_doc_field(file: SamplesFile, name: str) -> Mapping[int, str | None]:
    """doc_id -> the value of doc field `name` (at the doc's top level, else in its ``meta``); None where absent.
    Read once per file version: every variant of a comparison reads the same base files (read-only mapping).

    Raises:
        InputError: the file is gone or changed since ingest.
    """
    reason = unavailable_reason(file)
    if reason is not None:
        raise InputError(f"{reason}; cannot read doc field {name!r} (re-ingest the run)")
    stat = file.path.stat()
    key = (str(file.path), stat.st_mtime_ns, stat.st_size, name)  # a changed file is read again
    found = _DOC_FIELDS.get(key)
    if found is None:
        found = _read_doc_field(key[0], name)
        _DOC_FIELDS[key] = found
        _DOC_FIELDS.move_to_end(key)
        held = sum(len(v) for v in _DOC_FIELDS.values())
        while held > _DOC_FIELDS_HELD and len(_DOC_FIELDS) > 1:  # the oldest first; the one just read stays
            held -= len(_DOC_FIELDS.popitem(last=False)[1])
    else:
        _DOC_FIELDS.move_to_end(key)
    return found


_DOC_FIELDS: OrderedDict[tuple[str, int, int, str], Mapping[int, str | None]] = OrderedDict()
_DOC_FIELDS_HELD = 200_000
"""Doc field values kept from files already read (about 20 MB): every variant of a comparison reads the base's."""


def _read_doc_field(path: str, name: str) -> Mapping[int, str | None]:
    field_path = '$."' + name.replace('"', '') + '"'
    rows = duckdb.execute(
        f"""SELECT doc_id, coalesce(json_extract_string(doc, ?),
                   CASE WHEN json_valid(doc ->> 'meta') THEN json_extract_string(doc ->> 'meta', ?) END)
        FROM read_json(?, format='newline_delimited', columns={{'doc_id': 'BIGINT', 'doc': 'JSON'}},
                       maximum_object_size={_MAX_OBJECT})""",
        [field_path, field_path, path],
    ).fetchall()
    return MappingProxyType({int(doc_id): value for doc_id, value in rows})


def paired_doc_field(store: Store, paired: PairedItems, name: str) -> pd.Series:
    """Per row of ``paired.items`` (same index), doc field `name` of the item as the base's samples log shows it.

    Raises:
        InputError: a samples file is missing from the store, gone, or changed since ingest.
    """
    files = store.samples_files(paired.base)
    items = paired.items
    runs, tasks = items["base_run"].to_numpy(dtype=object), items["task"].to_numpy(dtype=object)
    doc_ids = items["doc_id"].to_numpy()
    rows: dict[tuple[str, str], list[int]] = {}  # positions of each (base run, task)'s rows (missing keys left out)
    for position, key in enumerate(zip(runs.tolist(), tasks.tolist(), strict=True)):
        if isinstance(key[0], str) and isinstance(key[1], str):
            rows.setdefault(key, []).append(position)
    values = np.full(len(items), None, dtype=object)
    for (run_id, task) in sorted(rows):
        file = files.get((run_id, task))
        if file is None:
            raise InputError(f"run {run_id} of {paired.base!r} has no samples file for task {task}; re-ingest it")
        found = read_doc_field(file, name)
        values[rows[(run_id, task)]] = [found.get(int(doc_ids[i])) for i in rows[(run_id, task)]]
    return pd.Series(values, index=items.index, dtype=object)
