"""HOW scorers for the probe suite: output formats (H2), tool calls (H3) and citations (H6)."""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from captrack.bounded import load_yaml
from captrack.errors import InputError
from captrack.metrics import text
from captrack.metrics.registry import scorer

__all__ = ["citation_metrics", "format_metrics", "parse_records", "tool_call_metrics"]

Record = dict[str, Any]
_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_LOOSE_CITATION = re.compile(r"\[[^\]\n]{0,20}\]|\(\s*(?:source\s*)?\d+\s*\)|\bsource \d+\b", re.IGNORECASE)


def _json_field(doc: Mapping[str, Any], key: str) -> Any:
    value = doc[key]
    return json.loads(value) if isinstance(value, str) else value


def _cells(line: str, delimiter: str) -> list[str]:
    if delimiter == "|":
        return [c.strip() for c in line.strip().strip("|").split("|")]
    return [c.strip() for c in next(csv.reader([line]))]


def _rows(body: str, fields: Sequence[str], delimiter: str) -> list[Record] | None:
    """Rows under the header line whose cells are exactly `fields` (CSV or Markdown table)."""
    lines = body.splitlines()
    wanted = [f.casefold() for f in fields]
    for i, line in enumerate(lines):
        if (delimiter == "|") != ("|" in line) or [c.casefold() for c in _cells(line, delimiter)] != wanted:
            continue
        rest = lines[i + 1:]
        if delimiter == "|":
            if not rest or not re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*", rest[0]):
                return None
            rest = rest[1:]
        rows: list[Record] = []
        for row in rest:
            if not row.strip() or (delimiter == "|" and "|" not in row):
                break
            cells = _cells(row, delimiter)
            if len(cells) != len(fields):
                return None
            rows.append(dict(zip(fields, cells, strict=True)))
        return rows or None
    return None


def _structured(body: str, fmt: str) -> Any:
    if fmt == "json":
        return text.find_json_value(body)
    try:
        return load_yaml(text.strip_fence(body), unique_keys=False)  # a model's answer: the last of a repeated key, as JSON
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def parse_records(response: str, fmt: str, fields: Sequence[str], shape: str) -> list[Record] | None:
    """The records a response gives in format `fmt` with exactly `fields`, or None when it does not parse."""
    if fmt in ("csv", "markdown_table"):
        return _rows(text.strip_fence(response), fields, "," if fmt == "csv" else "|")
    if fmt not in ("json", "yaml"):
        raise InputError(f"unknown output format {fmt!r} (json, yaml, csv, markdown_table)")
    try:
        value = _structured(response, fmt)
    except ValueError:
        return None
    records = [value] if shape == "object" and isinstance(value, dict) else value
    if shape == "list" and not isinstance(value, list):
        return None
    if not isinstance(records, list) or not records:
        return None
    if not all(isinstance(r, dict) and set(map(str, r)) == set(fields) for r in records):
        return None
    return records


def _typed(value: Any, like: Any) -> bool:
    if isinstance(like, bool) or isinstance(value, bool):
        return isinstance(value, bool) and isinstance(like, bool)
    return isinstance(value, int) if isinstance(like, int) else isinstance(value, str)


def _same(value: Any, gold: Any) -> bool:
    if isinstance(gold, int | float) and not isinstance(gold, bool):
        return text.numbers(str(value)) == [float(gold)] and not re.search(r"[^\W\d_]", str(value))
    return text.normalize(str(value)) == text.normalize(str(gold))


@scorer("formats", produces=("format_valid", "exact_match"))
def format_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Whether the response parses in the requested format (and JSON/YAML types), and holds the gold records."""
    fmt, fields = str(doc["format"]), [str(f) for f in _json_field(doc, "fields")]
    gold: list[Record] = _json_field(doc, "records")
    records = parse_records(response, fmt, fields, str(doc.get("shape", "object")))
    valid = records is not None
    if valid and records is not None and fmt in ("json", "yaml"):
        valid = all(_typed(r[f], gold[0][f]) for r in records for f in fields)
    correct = valid and records is not None and len(records) == len(gold) and all(
        any(all(_same(r[f], g[f]) for f in fields) for r in records) for g in gold
    )
    return {"format_valid": float(valid), "exact_match": float(correct)}


def _call(response: str) -> tuple[str, dict[str, Any]] | None:
    try:
        value = text.find_json_value(response)
    except ValueError:
        return None
    if isinstance(value, list) and value:
        value = value[0]
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):
        value = value["function"]
    name = value.get("name", value.get("tool", value.get("function")))
    args = value.get("arguments", value.get("args", value.get("parameters", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            return None
    if not isinstance(name, str) or not isinstance(args, dict):
        return None
    return name, args


@scorer("tool_call", produces=("tool_selection", "tool_arguments"))
def tool_call_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Whether the called tool is the gold one, and the share of argument keys with the gold value."""
    gold = _json_field(doc, "call")
    call = _call(response)
    if call is None or call[0].strip().casefold() != str(gold["name"]).casefold():
        return {"tool_selection": 0.0, "tool_arguments": 0.0}
    args, wanted = call[1], gold["arguments"]
    keys = set(args) | set(wanted)
    right = sum(1 for k in wanted if k in args and _same(args[k], wanted[k]))
    return {"tool_selection": 1.0, "tool_arguments": right / len(keys) if keys else 1.0}


@scorer("citations", produces=("citation_format", "citation_source"))
def citation_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Citations as ``[n]`` to existing sources only, and the share of cited sources that support the answer."""
    n_sources = int(doc["n_sources"])
    support = {int(s) for s in _json_field(doc, "support")}
    cited = [int(n) for group in _CITATION.findall(response) for n in group.split(",")]
    strays = [m for m in _LOOSE_CITATION.findall(response) if not _CITATION.fullmatch(m)]
    well_formed = bool(cited) and not strays and all(1 <= n <= n_sources for n in cited)
    unique = sorted(set(cited))
    source = sum(n in support for n in unique) / len(unique) if unique else 0.0
    return {"citation_format": float(well_formed), "citation_source": source}
