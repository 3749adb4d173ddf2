"""Answer extraction shared by the official CapTrack scorers (pure functions, no I/O)."""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "boxed",
    "final_number",
    "labelled_line",
    "last_marked",
    "mc_letter",
    "meta_field",
    "number_equal",
    "short_answer_hit",
    "squad_normalize",
]

_ANSWER_MARK = re.compile(r"\banswer\s*(?:is\s*[:=]?|[:=])\s*", re.IGNORECASE)
_NUMBER = re.compile(r"-?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def meta_field(doc: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """A field of the doc itself, else of its JSON ``meta`` (official rows keep extras there)."""
    if key in doc:
        value = doc[key]
    else:
        meta = doc.get("meta") or {}
        if isinstance(meta, str):
            meta = json.loads(meta) if meta.strip() else {}
        value = meta.get(key, default)
    return value


def _marked(response: str) -> tuple[int, str] | None:
    found = None
    for match in _ANSWER_MARK.finditer(response):
        rest = response[match.end():].split("\n", 1)[0].strip()
        if rest:
            found = (match.start(), rest)
    return found


def last_marked(response: str) -> str | None:
    """The text after the last "Answer:" / "answer is" / "final answer:" marker, up to the line end."""
    found = _marked(response)
    return found[1] if found else None


def labelled_line(response: str, label: str) -> str | None:
    """The text after the last line starting with ``<label>:`` (case-insensitive), or None."""
    found = None
    for line in response.splitlines():
        stripped = line.strip().lstrip("*#> ").replace("**", "")
        if stripped.lower().startswith(label.lower() + ":"):
            found = stripped[len(label) + 1:].strip()
    return found


def mc_letter(response: str, labels: Sequence[str]) -> str | None:
    """The option letter a response commits to, or None when it commits to none (or to several).

    Looks, in order, at the last "Answer: X" marker, then a reply that is only a letter ("B", "(B)",
    "B. text"). A letter in passing ("option A is wrong") is not an answer.
    """
    valid = "".join(labels)
    if not valid:
        return None
    single = re.compile(rf"^\(?\s*([{valid}])\s*(?:\)|\.|:|$|\s)", re.IGNORECASE)
    marked = last_marked(response)
    candidates = [re.sub(r"^(?:the\s+)?option\s+", "", marked.strip("* "), flags=re.IGNORECASE)] if marked else []
    candidates.append(response.strip())
    for candidate in candidates:
        found = single.match(candidate.strip().strip("*").strip())
        if found:
            return found.group(1).upper()
    return None


def final_number(response: str) -> str | None:
    """The final numeric answer: after the later of the last "Answer:" marker and "####", else the last number."""
    marks = [m for m in (_marked(response),) if m]
    if "####" in response:
        marks.append((response.rfind("####"), response.rsplit("####", 1)[1]))
    for _, segment in sorted(marks, reverse=True):
        found = _NUMBER.findall(segment)
        if found:
            return _clean_number(found[0])
    found = _NUMBER.findall(response)
    return _clean_number(found[-1]) if found else None


def _clean_number(raw: str) -> str:
    return raw.replace("$", "").replace(",", "").replace(" ", "").rstrip(".")


def number_equal(found: str | None, gold: str) -> bool:
    """Whether an extracted number equals the gold one (``18`` == ``18.00``)."""
    if found is None:
        return False
    try:
        return abs(float(found) - float(gold.replace(",", ""))) < 1e-6
    except ValueError:
        return False


def boxed(response: str) -> str | None:
    """The content of the last ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced; None if absent."""
    start = max(response.rfind("\\boxed"), response.rfind("\\fbox"))
    if start < 0:
        return None
    brace = response.find("{", start)
    if brace < 0:
        rest = response[start:].split(None, 1)
        return rest[1].split("$")[0].strip() if len(rest) > 1 else None
    depth = 0
    for i in range(brace, len(response)):
        if response[i] == "{":
            depth += 1
        elif response[i] == "}":
            depth -= 1
            if depth == 0:
                return response[brace + 1:i]
    return None


def squad_normalize(value: str) -> str:
    """SQuAD answer normalisation: lower case, no punctuation or articles, single spaces."""
    value = "".join(ch for ch in value.lower() if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", value).split())


def short_answer_hit(segment: str, aliases: Sequence[str], slack_words: int = 5) -> bool:
    """Whether a short answer states an alias without listing much else.

    Equal after SQuAD normalisation, or the alias as whole words inside an answer at most
    `slack_words` words longer than it (so "Paris, London, Rome and Berlin" does not match "Paris").
    """
    norm = squad_normalize(segment)
    for alias in aliases:
        gold = squad_normalize(alias)
        if not gold:
            continue
        if norm == gold:
            return True
        if f" {gold} " in f" {norm} " and len(norm.split()) <= len(gold.split()) + slack_words:
            return True
    return False

