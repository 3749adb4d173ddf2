"""W3 style metrics: how long a response is and which formatting it uses by default."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from captrack.metrics import text
from captrack.metrics.registry import scorer

__all__ = ["length_metrics", "style_metrics"]


@scorer("style", produces=("verbosity", "bullet_usage", "table_usage", "header_usage", "emoji_usage"))
def style_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Length in words and 0/1 use of bullets, tables, headers and emoji in one response."""
    return {
        "verbosity": float(len(text.words(response))),
        "bullet_usage": float(bool(text.bullet_lines(response))),
        "table_usage": float(text.has_markdown_table(response)),
        "header_usage": float(text.has_header(response)),
        "emoji_usage": float(text.has_emoji(response)),
    }


@scorer("length", produces=("verbosity",))
def length_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Length in words only: the deterministic diagnostic of tasks whose real metrics a judge scores."""
    return {"verbosity": float(len(text.words(response)))}
