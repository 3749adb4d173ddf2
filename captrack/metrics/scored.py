"""The answer each metric's scorer read from a response, for the drill-down pages.

Never a second extraction: the text shown is what the task's own scorer compares with the gold (its
registered `answer` function, captrack.metrics.registry.scored_answer), so scoring the shown answer
again gives the value the page reports. Which scorers score a task is not known here: the caller hands them in
(captrack.official.scorers reads them from a probe task's utils.py or an official row's config).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["NONE_FOUND", "WHOLE_RESPONSE", "scored_text"]

WHOLE_RESPONSE = "(the whole response: this metric reads no single answer from it)"
NONE_FOUND = "(no answer found)"


def scored_text(metric: str, scorers: tuple[str, ...], doc: Mapping[str, Any], response: str, output_type: str) -> str:
    """What the page shows as the answer that was scored for `metric`, given the task's `scorers` and the doc as
    they see it (whoever knows the task hands them in: captrack.official.scorers).

    Multiple choice: the option the model scored highest (it generated nothing). Generation scored by
    a captrack scorer: the answer that scorer read (or that it reads the whole response). Generation
    scored by lm-eval's own metric: the response after the task's filters, which is what it compared.
    """
    if output_type == "multiple_choice":
        return response
    from captrack.metrics.registry import get_scorer, scored_answer

    for name in scorers:
        if metric in get_scorer(name)[1]:
            found = scored_answer(name, doc, response)
            return WHOLE_RESPONSE if found is None else (found or NONE_FOUND)
    return response
