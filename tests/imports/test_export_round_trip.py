"""`captrack tasks --export` then `captrack import`, followed literally from the hint export prints: add a
'response' to each exported line (its id, doc_id and prompt kept), run the command the hint shows, ingest and compare.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path

import pandas as pd
import pytest

from captrack.backends.recorded_answers import ReplayRecord
from captrack.cli import main
from captrack.errors import InputError
from captrack.imports.run import _match

WORD = "captrack_probe_c2_word_problems"  # a generated-answer probe of 24 items


def _cli(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    return status, " ".join(buffer.getvalue().split())


def _answer(prompt: str, i: int, model: str) -> str:
    """A response: the base answers every item "42", the candidate answers the first 8 items otherwise."""
    return "I think 7" if model == "cand" and i < 8 else "42"


def test_the_export_hint_followed_literally_imports_and_compares(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    status, said = _cli("tasks", "--export", WORD, "--out", str(prompts))
    assert status == 0, said
    hint = re.search(r"add a 'response' to each line, then `(captrack import [^`]+)`", said)
    assert hint, said
    lines = [json.loads(line) for line in prompts.read_text().splitlines()]
    assert lines and all({"id", "doc_id", "prompt"} <= set(r) for r in lines)
    for model in ("base", "cand"):
        gens = tmp_path / f"{model}.jsonl"
        gens.write_text("".join(json.dumps({**r, "response": _answer(r["prompt"], i, model)}) + "\n"
                                for i, r in enumerate(lines)))
        command = hint.group(1).replace("FILE", str(gens)).replace("RUN_DIR", str(tmp_path / model))
        status, said = _cli(*shlex.split(command)[1:], "--name", model)
        assert status == 0 and f"{WORD}: {len(lines)} of {len(lines)} documents scored" in said, said
    store = tmp_path / "store.duckdb"
    for model in ("base", "cand"):
        assert _cli("ingest", str(tmp_path / model), "--store", str(store), "--name", model)[0] == 0
    out = tmp_path / "cmp"
    status, said = _cli("compare", "--store", str(store), "--base", "base", "--variant", "cand", "--out", str(out),
                        "--bootstrap", "0")
    assert status == 0, said
    rows = pd.read_csv(out / "transitions.csv")
    assert set(rows["task"]) == {WORD} and (rows["n"] == len(lines)).all()


def test_an_id_and_a_doc_id_naming_two_documents_are_refused_naming_both() -> None:
    docs = [{"id": f"w-{i}"} for i in range(3)]
    agree = [ReplayRecord(WORD, "42", id="w-0", doc_id=0), ReplayRecord(WORD, "42", id="w-1", doc_id=1),
             ReplayRecord(WORD, "42", id="w-2", doc_id=2)]
    assert _match(WORD, docs, agree, "id").indices == [0, 1, 2]
    crossed = [ReplayRecord(WORD, "42", id="w-0", doc_id=1), *agree[1:]]
    with pytest.raises(InputError, match=r"id w-0 is document #0 but its doc_id says #1"):
        _match(WORD, docs, crossed, "id")
