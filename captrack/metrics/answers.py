"""Short-answer scorers for the probe suite: exact answers, coverage of required points, false premises.

Docs carry their ground truth: ``answer`` and ``answer_type`` (``number``, ``text``, ``abstain`` or
``numbers``), ``aliases`` (other accepted spellings) and ``distractors`` (values that must not appear:
another entity's value, the real-world fact a counterfactual passage overrides). Lists may arrive as
JSON text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from captrack.errors import InputError
from captrack.metrics import extract, text
from captrack.metrics.registry import scorer

__all__ = ["coverage_metrics", "false_premise_metrics", "short_answer_metrics", "short_answer_read", "string_list"]

_REJECTION = (
    "no", "not", "never", "didn't", "doesn't", "wasn't", "isn't", "hasn't", "aren't", "weren't",
    "only", "false", "incorrect", "unknown", "mistaken", "premise", "neither", "none",
)


def string_list(value: Any) -> list[str]:
    """A doc field holding a list of strings, given as a list or as its JSON text."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise InputError(f"expected a list of strings, got {value!r}")
    return [str(v) for v in value]


def _text_hit(segment: str, accepted: Sequence[str], distractors: Sequence[str]) -> bool:
    if not any(text.contains_phrase(segment, a) for a in accepted):
        return False
    return not any(text.contains_phrase(segment, d) for d in distractors) and not text.is_abstention(segment)


def short_answer_read(doc: Mapping[str, Any], response: str) -> str:
    """The answer the short_answer scorer compares with the gold: a number (number), every number of the
    response (numbers), else the short-answer segment; "" where it finds none."""
    kind = str(doc.get("answer_type", "text"))
    if kind == "number":
        return extract.answer_number(extract.short_segment(response)) or ""
    if kind == "numbers":
        return ", ".join(str(int(x)) if x.is_integer() else repr(x) for x in text.numbers(response))
    return extract.short_segment(response)


@scorer("short_answer", produces=("exact_match",), answer=short_answer_read)
def short_answer_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Whether the response's short answer is the gold one (and names no distractor)."""
    kind = str(doc.get("answer_type", "text"))
    gold = str(doc["answer"])
    distractors = string_list(doc.get("distractors"))
    read = short_answer_read(doc, response)
    if kind == "number":
        hit = extract.number_equal(read or None, gold)
    elif kind == "numbers":
        found_all = set(text.numbers(read))
        wanted = {float(x) for x in text.numbers(gold)}
        hit = bool(wanted) and wanted <= found_all and not found_all & {float(d) for d in distractors}
    elif kind == "abstain":
        hit = text.is_abstention(read) and not any(text.contains_phrase(read, d) for d in distractors)
    elif kind == "text":
        hit = _text_hit(read, [gold, *string_list(doc.get("aliases"))], distractors)
    else:
        raise InputError(f"doc {doc.get('id', '?')!r}: unknown answer_type {kind!r} (number, numbers, text, abstain)")
    return {"exact_match": float(hit)}


@scorer("coverage", produces=("coverage",))
def coverage_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Share of the required points (``points``: one list of accepted phrasings each) the response states."""
    points = doc.get("points")
    if isinstance(points, str):
        points = json.loads(points)
    if not points:
        raise InputError(f"doc {doc.get('id', '?')!r} has no 'points' to cover")
    covered = [any(text.contains_phrase(response, str(p)) for p in point) for point in points]
    return {"coverage": sum(covered) / len(covered)}


@scorer("false_premise", produces=("overreach",))
def false_premise_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """1 when the answer supplies a value for what the false premise invents and corrects nothing.

    ``claims`` lists the values such an answer would state (colours, names, weekdays); an answer that
    names none, or that says the premise is wrong ("there is no third bridge"), does not overreach.
    """
    claimed = any(text.contains_phrase(response, c) for c in string_list(doc.get("claims")))
    corrected = any(text.contains_phrase(response, cue) for cue in _REJECTION)
    return {"overreach": float(claimed and not corrected)}
