"""H2 probe: restate short facts about invented people as JSON (with a schema), YAML, CSV or a Markdown table."""

from __future__ import annotations

import json
import random
from typing import Any

from captrack.probes import generator
from captrack.probes.world import TOWNS, person, plan

__all__ = ["FORMATS", "schema"]

FORMATS = ("json", "csv", "yaml", "markdown_table")
_JOBS = ("baker", "teacher", "pilot", "farmer", "nurse", "potter", "carpenter", "librarian")
_FIELDS = (("name", "age"), ("name", "age", "town"), ("name", "town", "job"))


def schema(fields: tuple[str, ...], many: bool) -> dict[str, Any]:
    """The JSON schema of one record (or a list of records) with `fields`."""
    record = {
        "type": "object",
        "properties": {f: {"type": "integer" if f == "age" else "string"} for f in fields},
        "required": list(fields),
        "additionalProperties": False,
    }
    return {"type": "array", "items": record} if many else record


def _instruction(fmt: str, fields: tuple[str, ...], many: bool) -> str:
    who = "one entry per person" if many else "a single entry"
    if fmt == "json":
        shape = "a JSON array" if many else "a JSON object"
        return f"Write the information as {shape} that matches this JSON schema: {json.dumps(schema(fields, many))}. Output only the JSON."
    if fmt == "yaml":
        shape = "a YAML list of mappings" if many else "a YAML mapping"
        return f"Write the information as {shape} with exactly the keys {', '.join(fields)} ({who}). Output only the YAML."
    if fmt == "csv":
        return f"Write the information as CSV with the header row {','.join(fields)} and one row per person. Output only the CSV."
    return f"Write the information as a Markdown table with the columns {' | '.join(fields)} and one row per person. Output only the table."


def _example(fmt: str, fields: tuple[str, ...]) -> str:
    """A worked example in `fmt` with `fields`, about a person who appears in no item."""
    sample = {"name": "Ivo Lark", "age": 40, "town": "Amberly", "job": "tailor"}
    values = [sample[f] for f in fields]
    if fmt == "json":
        body = json.dumps(dict(zip(fields, values, strict=True)))
    elif fmt == "yaml":
        body = "\n".join(f"{f}: {v}" for f, v in zip(fields, values, strict=True))
    elif fmt == "csv":
        body = f"{','.join(fields)}\n{','.join(map(str, values))}"
    else:
        body = f"| {' | '.join(fields)} |\n|{'---|' * len(fields)}\n| {' | '.join(map(str, values))} |"
    return f"Information: Ivo Lark is 40 years old, lives in Amberly and works as a tailor.\n\nAnswer:\n{body}"


@generator("formats", version=1.0)
def formats(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Formats cycle; level 1 one person with a worked example, level 2 one person, level 3 two people."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        fmt, level = plan(i, FORMATS)
        fields = _FIELDS[rng.randrange(2)] if level < 3 else _FIELDS[rng.randrange(3)]
        many = level == 3
        taken: set[str] = set()
        people = [
            {"name": person(rng, taken), "age": rng.randint(21, 79), "town": rng.choice(TOWNS), "job": rng.choice(_JOBS)}
            for _ in range(2 if many else 1)
        ]
        info = " ".join(f"{p['name']} is {p['age']} years old, lives in {p['town']} and works as a {p['job']}." for p in people)
        records = [{f: p[f] for f in fields} for p in people]
        prompt = f"{_instruction(fmt, fields, many)}\n\nInformation: {info}\n\nAnswer:"
        if level == 1:
            prompt = f"{_instruction(fmt, fields, many)}\n\n{_example(fmt, fields)}\n\nInformation: {info}\n\nAnswer:"
        items.append({
            "id": f"formats:{i}", "kind": fmt, "level": level, "format": fmt, "fields": list(fields),
            "shape": "list" if many else "object", "records": json.dumps(records), "prompt": prompt,
        })
    return items
