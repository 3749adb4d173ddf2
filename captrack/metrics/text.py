"""Shared, pure text parsing used by captrack's scorers (no I/O, no state)."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

__all__ = [
    "bullet_lines",
    "has_emoji",
    "has_header",
    "has_markdown_table",
    "parse_json_block",
    "words",
]

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+\S", re.MULTILINE)
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_TABLE_ROW = re.compile(r"^\s*\|?.*\|.*\|?\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?\s*$")
_FENCE = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
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
    return json.loads(stripped)
