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

__all__ = ["contrast_metrics", "form_choices", "form_metrics"]


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


def contrast_metrics(doc: Mapping[str, Any], loglikelihoods: Sequence[float]) -> dict[str, float | None]:
    """Whether the probe context favours the gold option more than the control context does.

    A contrast item has two forms, the probe then its control, with the same two options; the margin
    of a form is loglikelihood(gold) - loglikelihood(other). The item is right when the probe's margin
    exceeds the control's: the options are the same strings in both forms, so a preference for a
    shorter option or a habitual opener adds to both margins and cancels. Chance is 1/2.

    Raises:
        InputError: the doc is not two forms of two options, or the loglikelihoods do not match them.
    """
    forms = form_choices(doc)
    if [len(choices) for _, choices in forms] != [2, 2] or forms[0][1] != forms[1][1] or len(loglikelihoods) != 4:
        raise InputError(
            f"doc {doc.get('id', '?')!r}: a contrast item needs two forms with the same two options and 4 "
            f"loglikelihoods; got forms {[choices for _, choices in forms]} and {len(loglikelihoods)} loglikelihoods"
        )
    gold = int(doc["gold"])
    probe = loglikelihoods[gold] - loglikelihoods[1 - gold]
    control = loglikelihoods[2 + gold] - loglikelihoods[3 - gold]
    return {"contrast_acc": float(probe > control)}
