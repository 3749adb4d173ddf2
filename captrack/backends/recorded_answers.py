"""`captrack-replay`: an lm-eval model that answers from generations recorded elsewhere.

It reads a replay file (JSON Lines, one recorded response per line) and answers each
``generate_until`` request with the response recorded for that request's document, looked up by the
document's own id (``doc[id_field]``, ``id`` in every official row) or, for records that give
``doc_id``, by lm-eval's integer index of the document in the task. Prompts are never searched.

Replay file line: ``{"task": "captrack_mmlu_pro_full", "id": "mmlu_pro-70", "response": "...",
"prompt": "..."}``; ``doc_id`` (int) may stand in for ``id``; ``prompt`` is optional. When a record
keeps the prompt that produced its response, the request's prompt is replaced by it, so lm-eval's
samples log (``arguments``, ``prompt_hash``) shows the prompt the response was made from, not
captrack's. ``captrack import`` writes replay files; ``captrack-eval --model captrack-replay
--model_args responses=FILE`` replays one directly. Loglikelihood requests are refused: recorded text
has no log-probabilities.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lm_eval.api.model import LM

from captrack.errors import InputError

__all__ = ["MISSING_SHOWN", "ReplayLM", "ReplayRecord", "missing_message", "read_replay", "write_replay"]

MISSING_SHOWN = 20  # ids named in a "missing" error before "... and N more"


@dataclass(frozen=True)
class ReplayRecord:
    """One recorded response: its task, the document's id or lm-eval index, the text, the prompt if kept."""

    task: str
    response: str
    id: str | None = None
    doc_id: int | None = None
    prompt: str | None = None

    def as_json(self) -> dict[str, Any]:
        """The replay-file line (None fields left out)."""
        return {k: v for k, v in self.__dict__.items() if v is not None}


def missing_message(what: str, ids: Iterable[object], fix: str) -> str:
    """``<what>: 3 ids: a, b, c (... and N more); <fix>`` with at most MISSING_SHOWN ids named."""
    listed = sorted({str(i) for i in ids})
    shown = ", ".join(listed[:MISSING_SHOWN])
    more = f" ... and {len(listed) - MISSING_SHOWN} more" if len(listed) > MISSING_SHOWN else ""
    return f"{what}: {len(listed)} id(s): {shown}{more}; {fix}"


def write_replay(path: Path, records: Iterable[ReplayRecord]) -> Path:
    """Write a replay file (JSON Lines)."""
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record.as_json(), ensure_ascii=False) + "\n")
    return path


def read_replay(path: str | Path) -> dict[tuple[str, str], ReplayRecord]:
    """A replay file indexed by (task, key): key is the id, or ``#<doc_id>`` for index-keyed records.

    Raises:
        InputError: the file is missing, a line is not a record, or a key appears twice (ids named).
    """
    source = Path(path)
    if not source.is_file():
        raise InputError(f"captrack-replay: responses file {source} does not exist; write one with `captrack import`")
    book: dict[tuple[str, str], ReplayRecord] = {}
    duplicated: list[str] = []
    with source.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = _parse_line(source, line_no, line)
            key = (record.task, _key(record.id, record.doc_id))
            if key in book:
                duplicated.append(f"{record.task}/{key[1]}")
            book[key] = record
    if duplicated:
        raise InputError(missing_message(f"{source}: recorded twice", duplicated, "keep one response per document"))
    return book


def _parse_line(source: Path, line_no: int, line: str) -> ReplayRecord:
    try:
        raw = json.loads(line)
        record = ReplayRecord(task=str(raw["task"]), response=str(raw["response"]), id=raw.get("id"),
                              doc_id=raw.get("doc_id"), prompt=raw.get("prompt"))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"{source}:{line_no}: not a replay record with task, response and id or doc_id ({exc})") from exc
    if (record.id is None) == (record.doc_id is None):
        raise InputError(f"{source}:{line_no}: give exactly one of 'id' (the document's id) and 'doc_id' (lm-eval's index)")
    return record


def _key(doc_key: str | None, doc_id: int | None) -> str:
    return str(doc_key) if doc_key is not None else f"#{int(doc_id or 0)}"


class ReplayLM(LM):
    """lm-eval model `captrack-replay`: recorded responses, matched to documents by id."""

    def __init__(self, responses: str, id_field: str = "id", pretrained: str = "imported", **provenance: Any) -> None:
        """Load the replay file.

        Args:
            responses: the replay file.
            id_field: the document field holding its id (``id`` in every official row).
            pretrained: the model name lm-eval files the run under.
            provenance: recorded as given (``source``, ``format``, ``sha256`` of the imported file);
                lm-eval's ``batch_size``/``device`` are accepted and ignored.
        """
        super().__init__()
        self.book = read_replay(responses)
        self.id_field = id_field
        self.name = pretrained
        self.provenance = {k: v for k, v in provenance.items() if k not in ("batch_size", "max_batch_size", "device")}

    def _lookup(self, request: Any) -> ReplayRecord | None:
        task, doc = str(request.task_name), request.doc
        if isinstance(doc, Mapping) and doc.get(self.id_field) is not None:
            found = self.book.get((task, str(doc[self.id_field])))
            if found is not None:
                return found
        return self.book.get((task, f"#{request.doc_id}"))

    def generate_until(self, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
        """The recorded response of each request's document; every missing one is named at once.

        Raises:
            InputError: some documents have no recorded response (ids named, up to MISSING_SHOWN).
        """
        found = [self._lookup(r) for r in requests]
        missing = [f"{r.task_name}/{self._doc_label(r)}" for r, rec in zip(requests, found, strict=True) if rec is None]
        if missing:
            raise InputError(missing_message(
                "captrack-replay: no recorded response for", missing,
                "add them to the source, or import with --allow-partial to score only the recorded documents",
            ))
        answers = []
        for request, record in zip(requests, found, strict=True):
            assert record is not None  # checked above
            if record.prompt is not None:  # the samples log shows the prompt that produced the response
                request.arguments = (record.prompt, *request.arguments[1:])
            answers.append(record.response)
        return answers

    def _doc_label(self, request: Any) -> str:
        doc = request.doc
        if isinstance(doc, Mapping) and doc.get(self.id_field) is not None:
            return str(doc[self.id_field])
        return f"#{request.doc_id}"

    def loglikelihood(self, requests: list[Any], disable_tqdm: bool = False) -> list[tuple[float, bool]]:
        """Refused: recorded generations carry no log-probabilities."""
        raise InputError(_refusal("loglikelihood", requests))

    def loglikelihood_rolling(self, requests: list[Any], disable_tqdm: bool = False) -> list[float]:
        """Refused: recorded generations carry no log-probabilities."""
        raise InputError(_refusal("loglikelihood_rolling", requests))


def _refusal(kind: str, requests: list[Any]) -> str:
    tasks = sorted({str(r.task_name) for r in requests})
    return (
        f"captrack-replay cannot answer {kind} requests (task(s) {', '.join(tasks)}): imported generations are "
        "text without log-probabilities; replay only generate_until tasks, or evaluate the model itself on these"
    )
