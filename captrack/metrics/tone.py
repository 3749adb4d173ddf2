"""W3 register of a response beyond its formatting: sentences, hedging and directness.

Rule-based and deliberately simple: ``hedging`` is 1 when the response uses a hedge phrase
("it depends", "might", "I think", "possibly", ...); ``directness`` is 1 when the response starts on
its content, without a pleasantry or restatement ("Sure!", "Great question", "Certainly, here is").
Neither has a good side: they describe default behaviour, so both are ``neutral``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from captrack.metrics import text
from captrack.metrics.registry import scorer

__all__ = ["sentences", "tone_metrics"]

_SENTENCE_END = re.compile(r"[.!?。！？]+(?=\s|$)")
_HEDGE = re.compile(
    r"\b(?:it depends|might|may be|maybe|perhaps|possibly|probably|i think|i believe|it seems|"
    r"generally|typically|in most cases|not always|could be|it'?s hard to say|likely)\b",
    re.IGNORECASE,
)
_PREAMBLE = re.compile(
    r"^\W*(?:sure|certainly|of course|absolutely|great question|good question|what a|okay|ok|alright|"
    r"i'?d be (?:happy|glad)|i'?m (?:happy|glad)|happy to|thank you|thanks|here(?:'s| is| are))\b",
    re.IGNORECASE,
)


def sentences(response: str) -> int:
    """Number of sentences: sentence-final punctuation runs, plus a final unpunctuated one."""
    body = response.strip()
    if not body:
        return 0
    ends = len(_SENTENCE_END.findall(body))
    return ends + (0 if _SENTENCE_END.search(body[-3:] + " ") else 1)


@scorer("tone", produces=("sentence_count", "hedging", "directness"))
def tone_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Sentence count, 0/1 hedging and 0/1 directness of one response."""
    body = response.strip()
    return {
        "sentence_count": float(sentences(body)),
        "hedging": float(_HEDGE.search(body) is not None),
        "directness": float(bool(text.words(body)) and _PREAMBLE.match(body) is None),
    }
