"""Answer extraction shared by captrack's scorers (pure functions, no I/O): one policy for all.

The policy (docs/reference/answer-extraction.md), for option letters, numbers and short answers alike:

- An explicit answer marker ("The answer is", "Answer:", "final answer is", GSM8K's "####") marks the
  answer; the FIRST marker that is followed by an answer wins, so later repetitions, a few-shot
  continuation or rambling after a committed answer change nothing. Its segment runs to the line end.
- Option letters count only in upper case, right after a marker or as the whole reply ("C", "(C)",
  "C." or "C. <that option's text>"), so a reply opening with "(a)", "(i)" or the article "A" is no
  letter. "A" and "I" followed by a lower-case word are the article and the pronoun, not letters.
  A second, different option letter in the same sentence ("(B) or (F)") is a hedge: no answer.
- Numbers: within the chosen segment's first sentence, after its last "=" (a computation ends in its
  result), the first number that no negation ("not", "n't", "never", "rather than", "instead of")
  precedes; "3 or 4" (a different number after "or") is a hedge: no answer.
- No answer is None; the scorers score it 0 (a failure of the model), never NaN.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "answer_number",
    "boxed",
    "final_number",
    "first_marked",
    "labelled_line",
    "letter_reading",
    "marked_segments",
    "mc_letter",
    "meta_field",
    "number_equal",
    "short_answer_hit",
    "short_segment",
    "squad_normalize",
]

_ANSWER_MARK = re.compile(r"\banswer\s*(?:is\s*[:=]?|[:=])\s*|####\s*(?=[-$\d])", re.IGNORECASE)
_NUMBER = re.compile(r"-?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)")
_LEAD = re.compile(r"^(?:[*_`\s]|\b(?:the\s+)?(?:option|choice)\b)*", re.IGNORECASE)
_LETTER = re.compile(r"^\(?([A-Z])(?=$|[).:,;!?*_`\]/]|\s+[\w$(\"'])")
_NEGATION = re.compile(r"(?:\bnot|n't|\bnever|\brather than|\binstead of)\W*$", re.IGNORECASE)
_NUMBER_HEDGE = re.compile(r"\bor\b", re.IGNORECASE)


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


def marked_segments(response: str) -> list[str]:
    """The text after each answer marker ("Answer:", "answer is", "####"), to the line end, in order."""
    segments = []
    for match in _ANSWER_MARK.finditer(response):
        rest = response[match.end():].split("\n", 1)[0].strip()
        if rest:
            segments.append(rest)
    return segments


def first_marked(response: str) -> str | None:
    """The text after the first answer marker, up to the line end; None when there is no marker."""
    segments = marked_segments(response)
    return segments[0] if segments else None


def short_segment(response: str) -> str:
    """A short answer: the first marked segment, else the response's first non-empty line."""
    return first_marked(response) or next((ln.strip() for ln in response.splitlines() if ln.strip()), "")


def _sentence(segment: str) -> str:
    end = _SENTENCE_END.search(segment)
    return segment[:end.start()] if end else segment


def labelled_line(response: str, label: str) -> str | None:
    """The text after the last line starting with ``<label>:`` (case-insensitive), or None."""
    found = None
    for line in response.splitlines():
        stripped = line.strip().lstrip("*#> ").replace("**", "")
        if stripped.lower().startswith(label.lower() + ":"):
            found = stripped[len(label) + 1:].strip()
    return found


def _lead_letter(segment: str) -> tuple[str, str] | None:
    """The upper-case letter a segment opens with (after "option", "**"), and the text after it."""
    body = _LEAD.sub("", segment, count=1)
    found = _LETTER.match(body)
    if not found:
        return None
    letter, rest = found.group(1), body[found.end():]
    if letter in ("A", "I") and re.match(r"\s+[a-z]", rest):
        return None  # the article "A" or the pronoun "I"
    return letter, rest


def _hedged(rest: str, letter: str) -> bool:
    """Whether the rest of the answer's sentence names another option: "(B) or (F)", "B or F", "B/F"."""
    sentence = _sentence(rest)
    others = re.finditer(r"\(([A-Z])\)|(?:\bor\b|\band\b|/|,|&)\s*\(?([A-Z])(?=\s*(?:$|[).,;:/&]|\bor\b|\band\b))", sentence)
    for other in others:
        named = other.group(1) or other.group(2)
        if named != letter and not _NEGATION.search(sentence[:other.start()]):
            return True
    return False


def _whole_reply_letter(response: str, valid: str, options: Sequence[str] | None) -> str | None:
    """A reply that is only a letter ("C", "(C)", "C."), or the letter followed by its option's text."""
    reply = response.strip().strip("*_` ").strip()
    found = re.fullmatch(rf"\(?([{valid}])\)?[.:]?", reply)
    if found:
        return found.group(1)
    found = re.fullmatch(rf"\(?([{valid}])[).:]\s+(.+)", reply, flags=re.DOTALL)
    if found and options:
        index = ord(found.group(1)) - ord("A")
        if index < len(options) and squad_normalize(found.group(2)) == squad_normalize(options[index]):
            return found.group(1)
    return None


def letter_reading(response: str, labels: Sequence[str], options: Sequence[str] | None = None) -> tuple[str | None, str]:
    """The option letter a response commits to (None for no answer) and how it was read.

    The first answer marker followed by an upper-case letter decides; without one, a reply that is
    only a letter (or a letter and its option's text, when ``options`` are given). A letter in
    passing ("option A is wrong") is not an answer. ``how`` is one of: "marker", "whole reply",
    "hedge", "not an option", "no letter after a marker", "no marker".
    """
    valid = "".join(labels)
    segments = marked_segments(response)
    for segment in segments:
        lead = _lead_letter(segment)
        if lead is None:
            continue
        letter, rest = lead
        if letter not in valid:
            return None, "not an option"
        if _hedged(rest, letter):
            return None, "hedge"
        return letter, "marker"
    whole = _whole_reply_letter(response, valid, options) if valid else None
    if whole:
        return whole, "whole reply"
    return None, "no letter after a marker" if segments else "no marker"


def mc_letter(response: str, labels: Sequence[str], options: Sequence[str] | None = None) -> str | None:
    """The option letter a response commits to, or None (no answer, an invalid letter, or a hedge)."""
    return letter_reading(response, labels, options)[0]


def answer_number(segment: str) -> str | None:
    """The number a marked answer segment states (the policy above), or None for none or a hedge."""
    sentence = _sentence(segment).rsplit("=", 1)[-1]
    for match in _NUMBER.finditer(sentence):
        if _NEGATION.search(sentence[:match.start()]):
            continue
        value = _clean_number(match.group(0))
        later = sentence[match.end():]
        hedge = _NUMBER_HEDGE.search(later)
        if hedge and any(not number_equal(_clean_number(m), value) for m in _NUMBER.findall(later[hedge.end():])):
            return None
        return value
    return None


def final_number(response: str) -> str | None:
    """The final numeric answer: from the first marker stating one ("Answer:", "####"), else the last number."""
    for segment in marked_segments(response):
        found = answer_number(segment)
        if found is not None:
            return found
    numbers = _NUMBER.findall(response)
    return _clean_number(numbers[-1]) if numbers else None


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

