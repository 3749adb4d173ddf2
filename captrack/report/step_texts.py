"""The texts of the items that flipped at each training step, as the steps page shows them.

A flip at step s is against the step evaluated before it (or the base): the page shows, per flipped item,
the question (the last user turn of the logged prompt, cut short), the answer before and the answer at step
s. captrack.compare.step_texts reads them from the samples files the store recorded for those runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from captrack.report.html import esc
from captrack.report.prompt_fold import fold_prompt
from captrack.results.samples import ItemText

__all__ = ["QUESTION_CHARS", "FlipKey", "StepTexts", "flip_text_cell"]

QUESTION_CHARS = 400
"""How much of a flipped item's question and answers the steps page shows (the rest is cut, marked …)."""

FlipKey = tuple[str, int, str, int]
"""(variant, step, task, doc id): one flipped item at one step."""


@dataclass(frozen=True)
class StepTexts:
    """One flipped item's texts: before the step (the base or the step evaluated before) and at the step
    (None: that samples file is gone or changed since ingest)."""

    before_label: str
    before: ItemText | None
    after: ItemText | None


def _cut(text: str) -> str:
    text = text.strip()
    return text if len(text) <= QUESTION_CHARS else text[:QUESTION_CHARS].rstrip() + "…"


def flip_text_cell(found: StepTexts | None, step: int) -> str:
    """One table cell: the question, the answer before and the answer at `step`, escaped; what is missing said."""
    shown = None if found is None else found.after or found.before
    if found is None or shown is None:
        return '<td class="muted">texts unavailable: the samples files are gone or changed since ingest</td>'
    question = fold_prompt(shown.prompt).question
    answers = [(found.before_label, found.before), (f"step {step}", found.after)]
    said = "".join(f"<dt>{esc(label)}</dt><dd><code>{esc(_cut(t.response)) if t is not None else 'unavailable'}</code></dd>"
                   for label, t in answers)
    gold = f"<dt>gold</dt><dd><code>{esc(_cut(shown.gold))}</code></dd>" if shown.gold else ""
    return f'<td><p class="question">{esc(_cut(question))}</p><dl class="flip-texts">{said}{gold}</dl></td>'
