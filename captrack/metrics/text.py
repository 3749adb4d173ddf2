"""Shared, pure text parsing used by captrack's scorers (no I/O, no state)."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from captrack.bounded import load_json

__all__ = [
    "bullet_lines",
    "contains_phrase",
    "find_json_value",
    "has_emoji",
    "has_header",
    "has_markdown_table",
    "is_abstention",
    "is_refusal",
    "normalize",
    "numbers",
    "parse_json_block",
    "strip_fence",
    "words",
]

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S", re.MULTILINE)
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*\|?.*\|.*\|?\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
_ANY_FENCE = re.compile(r"```[\w-]*[ \t]*\n(.*?)(?:\n[ \t]*```|$)", re.DOTALL)
_NUMBER = re.compile(r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d])")
_DIGIT_COMMA = re.compile(r"(?<=\d),(?=\d{3}\b)")
_REFUSAL = re.compile(
    r"\b(?:i|we)\s*(?:can ?not|can't|won't|will not|must decline|have to decline|refuse)\b"
    r"|\bi(?:'m| am) (?:unable|not able|not equipped|not allowed|not permitted|not going) to\b"
    r"|\bi (?:don't|do not) have the (?:capability|ability|means)\b"
    r"|\b(?:can ?not|can't|won't|unable to|not able to) (?:help|assist|provide|comply|support|share|give|do that)"
    r"|\bas an? (?:ai|chatbot|language model|assistant)\b|\bsorry,? but\b|\bi(?:'m| am) sorry[^.!?\n]{0,60}\bbut\b"
    r"|\b(?:against|violates?) (?:my|the|our) (?:guidelines|polic(?:y|ies)|principles|rules)\b"
    r"|\bi (?:do not|don't) (?:feel comfortable|think i (?:can|should))\b"
)
_ABSTAIN = re.compile(
    r"\bunknown\b|\bnot (?:mentioned|stated|given|specified|provided|included|said|known|in the (?:passage|text|context))\b"
    r"|\b(?:does|do|did) ?n[o']t (?:say|mention|state|specify|give|provide|tell|include)\b"
    r"|\bno (?:information|mention|answer|data)\b|\b(?:can ?not|can't) (?:be )?(?:determine|tell|answer|know)"
    r"|\bi (?:do not|don't) know\b|\bnot enough information\b"
)
_EMOJI_RANGES = (
    (0x1F300, 0x1FAFF),  # pictographs, emoticons, transport, supplemental symbols
    (0x2600, 0x27BF),  # misc symbols and dingbats
    (0x1F1E6, 0x1F1FF),  # regional indicators (flags)
)


def words(text: str) -> list[str]:
    """Split text into words: runs of letters/digits, keeping inner apostrophes and hyphens."""
    return _WORD.findall(text)


def bullet_lines(text: str) -> list[str]:
    """Lines that are items of a bulleted or numbered list."""
    return [m.group(0).strip() for m in _BULLET.finditer(text)]


def has_header(text: str) -> bool:
    """Whether the text has a Markdown ATX header (``# Title``)."""
    return _HEADER.search(text) is not None


def has_markdown_table(text: str) -> bool:
    """Whether the text has a Markdown table: a row with pipes directly above a ``|---|`` rule."""
    lines = text.splitlines()
    for above, rule in itertools.pairwise(lines):
        if _TABLE_RULE.match(rule) and _TABLE_ROW.match(above) and "|" in above:
            return True
    return False


def has_emoji(text: str) -> bool:
    """Whether the text contains an emoji code point."""
    return any(lo <= ord(ch) <= hi for ch in text for lo, hi in _EMOJI_RANGES)


def parse_json_block(text: str) -> Any:
    """Parse a response that is a JSON value, optionally inside one Markdown code fence.

    Raises:
        ValueError: when the text (after removing the fence) is not valid JSON.
    """
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    return load_json(stripped)


def normalize(text: str) -> str:
    """Casefold, drop thousands separators and punctuation, collapse whitespace (for phrase matching)."""
    text = _DIGIT_COMMA.sub("", text.replace("’", "'").casefold())
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether `phrase` occurs in `text` as whole words, after normalising both."""
    needle = normalize(phrase)
    return bool(needle) and f" {needle} " in f" {normalize(text)} "


def numbers(text: str) -> list[float]:
    """The numbers in `text`, in order (``3,400`` is 3400; ``7.5`` is 7.5)."""
    return [float(m.group(0).replace(",", "")) for m in _NUMBER.finditer(text)]


def is_refusal(text: str) -> bool:
    """Whether the opening of a response refuses the request (rule-based: "I can't help with that", ...)."""
    return _REFUSAL.search(text[:300].replace("’", "'").casefold()) is not None


def is_abstention(text: str) -> bool:
    """Whether a short answer declines to answer from missing information ("unknown", "not mentioned")."""
    return _ABSTAIN.search(text.replace("’", "'").casefold()) is not None


def strip_fence(text: str) -> str:
    """The body of the first Markdown code fence in `text`, or the stripped text when there is none."""
    fenced = _ANY_FENCE.search(text)
    return (fenced.group(1) if fenced else text).strip()


def find_json_value(text: str) -> Any:
    """The first JSON object or array in `text` (fenced, bare, or inside prose).

    Raises:
        ValueError: when no JSON object or array parses anywhere in the text.
    """
    decoder = json.JSONDecoder()
    body = strip_fence(text)
    for start, char in enumerate(body):
        if char in "{[":
            try:
                return decoder.raw_decode(body, start)[0]
            except json.JSONDecodeError:
                continue
            except RecursionError:  # a reply nested past the stack: no value a scorer can use
                raise ValueError("the response's JSON is nested too deeply") from None
    raise ValueError("no JSON object or array in the response")
