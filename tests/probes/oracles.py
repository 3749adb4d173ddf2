"""Oracle and wrong responses built from a probe item's ground truth (used by the validity tests)."""

from __future__ import annotations

import csv
import io
import itertools
import json
from collections.abc import Callable
from typing import Any

import yaml

from captrack.metrics.instructions import check_constraint
from captrack.metrics.text import words

FILLER = ("a", "calm", "short", "note", "about", "the", "day", "and", "its", "small", "plan")


def _content(specs: list[dict[str, Any]], length: int) -> str:
    keywords = [str(k) for s in specs if s["kind"] == "include_keywords" for k in s["keywords"]]
    return " ".join([*keywords, *itertools.islice(itertools.cycle(FILLER), max(length - len(keywords), 0))])


def _assemble(specs: list[dict[str, Any]], length: int) -> str:
    kinds = {s["kind"]: s for s in specs}
    content = _content(specs, length)
    tokens = content.split()
    if "sections" in kinds:
        n = int(kinds["sections"]["n"])
        chunks = [" ".join(tokens[i::n]) or "x" for i in range(n)]
        text = "\n".join(f"{kinds['sections'].get('marker', 'SECTION')} {k + 1}\n{c}" for k, c in enumerate(chunks))
    elif "bullet_count" in kinds:
        n = int(kinds["bullet_count"]["n"])
        text = "\n".join(f"- {' '.join(tokens[i::n]) or 'x'}" for i in range(n))
    elif "json_object" in kinds:
        keys = kinds["json_object"].get("keys") or ["text"]
        text = json.dumps({k: content if i == len(keys) - 1 else "note" for i, k in enumerate(keys)})
    else:
        text = content
    if "start_with" in kinds:
        text = f"{kinds['start_with']['phrase']}\n{text}"
    if "end_with" in kinds:
        text = f"{text}\n{kinds['end_with']['phrase']}"
    if "lowercase" in kinds:
        text = text.lower()
    if "uppercase" in kinds:
        text = text.upper()
    return text


def compose(specs: list[dict[str, Any]]) -> str:
    """A response that satisfies every constraint in `specs` (searching over its length).

    Raises:
        AssertionError: no length works, i.e. the specs cannot all hold at once.
    """
    for length in (12, 30, 45, 8, 5, 3, 1):
        response = _assemble(specs, length)
        if all(check_constraint(response, s) for s in specs):
            return response
    raise AssertionError(f"no response satisfies {specs}")


def violate(spec: dict[str, Any], response: str) -> str:
    """`response` changed so that constraint `spec` no longer holds."""
    kind = spec["kind"]
    edits: dict[str, Callable[[], str]] = {
        "lowercase": lambda: response + " Capital",
        "uppercase": lambda: response + " small",
        "include_keywords": lambda: " ".join(w for w in response.split() if w.lower().strip(".,") not in
                                             {str(k).lower() for k in spec["keywords"]}),
        "forbid_words": lambda: f"{response} {spec['words'][0]}",
        "max_words": lambda: " ".join(["word"] * (int(spec["n"]) + 1)),
        "min_words": lambda: " ".join(words(response)[: int(spec["n"]) - 1]),
        "start_with": lambda: f"Well {response}",
        "end_with": lambda: f"{response} Extra",
        "bullet_count": lambda: f"{response}\n- one more",
        "forbid_char": lambda: f"{response} {spec['char']}",
        "json_object": lambda: response.replace("{", "", 1),
        "sections": lambda: f"{response}\n{spec.get('marker', 'SECTION')} 9\nmore",
    }
    return edits[kind]()


def serialize(records: list[dict[str, Any]], fmt: str, fields: list[str], shape: str) -> str:
    """Records written in output format `fmt` (json, yaml, csv, markdown_table)."""
    value: Any = records[0] if shape == "object" else records
    if fmt == "json":
        return json.dumps(value)
    if fmt == "yaml":
        return yaml.safe_dump(value, sort_keys=False)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(fields)
        writer.writerows([[r[f] for f in fields] for r in records])
        return out.getvalue()
    lines = [" | ".join(fields), " | ".join("---" for _ in fields)]
    lines += [" | ".join(str(r[f]) for f in fields) for r in records]
    return "\n".join(f"| {line} |" for line in lines)
