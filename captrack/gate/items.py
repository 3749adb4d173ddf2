"""The items behind a gate's rules that did not pass: question, gold answer, base answer and candidate answer.

Only a comparison computed in this process carries them (its paired items and the texts it read for the flipped
ones: `captrack run --gate`, whose board reads them for its task pages, and `captrack compare --gate ...
--gate-report DIR`, which asks for them); a comparison folder on disk holds the counts only (transitions.csv).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["ITEMS_SHOWN", "FlippedItem", "ItemKey", "flipped_items"]

ITEMS_SHOWN = 5
"""How many items a gate report shows per (variant, task, metric) that did not pass: those that got worse."""
_CHARS = 300

ItemKey = tuple[str, str, str]
"""(variant, task, metric)."""


@dataclass(frozen=True)
class FlippedItem:
    """One item right under the base and wrong under the variant (on the metric's better side), as texts."""

    doc_id: int
    question: str
    gold: str
    base_answer: str
    variant_answer: str


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _CHARS else text[:_CHARS].rstrip() + "…"


def flipped_items(comparisons: Sequence[Any], keys: set[ItemKey]) -> dict[ItemKey, list[FlippedItem]]:
    """Up to ITEMS_SHOWN items that got worse per (variant, task, metric) in `keys`, where the comparisons carry
    their paired items and texts (an empty list where they do not: nothing is guessed)."""
    from captrack.analysis.transitions import flipped_by_key
    from captrack.metrics.registry import lower_is_better
    from captrack.report.prompt_fold import fold_prompt

    texts: dict[tuple[str, str], dict[int, Any]] = {}
    for comparison in comparisons:
        for key, found in getattr(comparison, "item_texts", {}).items():
            texts.setdefault(key, {}).update(found)
    out: dict[ItemKey, list[FlippedItem]] = {}
    for comparison in comparisons:
        for variant, paired in getattr(comparison, "paired", {}).items():
            wanted = {(t, m): lower_is_better(m) for v, t, m in keys if v == variant}
            if not wanted:
                continue
            for (task, metric), (frame, _) in flipped_by_key(paired.items, wanted, 10**9).items():
                worse = frame[frame["change"] == "forgotten"].head(ITEMS_SHOWN)
                rows = []
                for doc_id, base_run, variant_run in zip(worse["doc_id"], worse["base_run"], worse["variant_run"], strict=True):
                    b = texts.get((str(base_run), task), {}).get(int(doc_id))
                    v = texts.get((str(variant_run), task), {}).get(int(doc_id))
                    if b is None or v is None:
                        continue  # the samples file is gone or changed: said on the board, not guessed here
                    rows.append(FlippedItem(int(doc_id), _cut(fold_prompt(b.prompt).question), _cut(b.gold),
                                            _cut(b.response), _cut(v.response)))
                out[(variant, task, metric)] = rows
    return out
