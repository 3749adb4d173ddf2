"""`captrack tasks --export TASK`: a task's prompts as JSON Lines, to generate the responses elsewhere.

Each line holds the document's ``id`` (where its documents have one), ``doc_id`` (lm-eval's index) and the
``prompt`` lm-eval renders from it (doc_to_text, before any chat template). Generate a ``response`` per line
with your own pipeline and `captrack import FILE --format jsonl --task TASK --items N` scores them; a probe is
exported and imported at the same size N (its metadata n).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captrack.errors import InputError, UnknownNameError
from captrack.files import write_atomic

__all__ = ["export_prompts"]


def _prompt(task: Any, doc: Any) -> str:
    text = task.doc_to_text(doc)
    return text if isinstance(text, str) else str(text)


def export_prompts(task: str, out: Path, n: int | None = None) -> int:
    """Write `task`'s prompts (id, doc_id, prompt per line) to `out` for its first `n` items (a probe's metadata n;
    None: the task's own size); returns how many.

    Raises:
        UnknownNameError: `task` is not a captrack task (close names listed).
        InputError: `out` exists (nothing of the user's is replaced), or the task scores option likelihoods
            (text cannot be imported for it).
    """
    from captrack.lmeval import task_manager

    if out.exists():
        raise InputError(f"{out} already exists; choose a new --out file")
    manager = task_manager(include_defaults=False, metadata={"n": n} if n else None)
    if not manager.match_tasks([task]):
        raise UnknownNameError("captrack task", task, manager.match_tasks(["captrack_*"]))
    loaded = manager.load([task])["tasks"][task]
    if loaded.OUTPUT_TYPE == "multiple_choice":
        raise InputError(f"task {task} is scored by option likelihood (multiple_choice): generated text cannot be "
                         "imported for it; export a generated-answer task")
    lines = []
    for index, doc in enumerate(loaded.eval_docs):
        key = {"id": doc["id"]} if isinstance(doc, dict) and doc.get("id") is not None else {}
        lines.append(json.dumps({**key, "doc_id": index, "prompt": _prompt(loaded, doc)}, ensure_ascii=False) + "\n")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, "".join(lines))
    return len(lines)
