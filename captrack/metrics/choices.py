"""C5a/C5c metrics for one item asked under several forms (phrasings, option orders, typos, languages).

Not a response scorer: the inputs are option loglikelihoods, one block per form. A doc carries
``forms`` (a list, or its JSON text, of ``{"prompt": ..., "choices": [...]}``, choices in the same
canonical order in every form) and ``gold`` (the canonical index of the right option).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from captrack.errors import InputError

__all__ = ["form_choices", "form_metrics"]


def form_choices(doc: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """The (prompt, choices) of every form of an item, in order."""
    forms = doc["forms"]
    if isinstance(forms, str):
        forms = json.loads(forms)
    return [(str(f["prompt"]), [str(c) for c in f["choices"]]) for f in forms]


def form_metrics(doc: Mapping[str, Any], loglikelihoods: Sequence[float]) -> dict[str, float | None]:
    """Share of forms whose most likely option is the gold one, and whether every form picks the same.

    Raises:
        InputError: the number of loglikelihoods is not the total number of options over the forms.
    """
    forms = form_choices(doc)
    sizes = [len(choices) for _, choices in forms]
    if len(loglikelihoods) != sum(sizes) or not forms:
        raise InputError(
            f"doc {doc.get('id', '?')!r}: got {len(loglikelihoods)} loglikelihoods for forms with {sizes} options"
        )
    picks: list[int] = []
    start = 0
    for size in sizes:
        block = list(loglikelihoods[start:start + size])
        picks.append(block.index(max(block)))
        start += size
    gold = int(doc["gold"])
    return {
        "form_accuracy": sum(p == gold for p in picks) / len(picks),
        "form_consistency": float(len(set(picks)) == 1),
    }
