"""The answer each metric's scorer read from a response, for the drill-down pages.

Never a second extraction: the text shown is what the task's own scorer compares with the gold (its
registered `answer` function, captrack.metrics.registry.scored_answer), so scoring the shown answer
again gives the value the page reports. Which scorer scores a task: a probe task's utils.py names it
(``SCORER``), an official task's row names its config (captrack.official.configs).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from captrack.errors import UnknownNameError

__all__ = ["WHOLE_RESPONSE", "scored_text", "task_scorers"]

WHOLE_RESPONSE = "(the whole response: this metric reads no single answer from it)"
NONE_FOUND = "(no answer found)"


@lru_cache(maxsize=256)
def _probe_scorer(task: str) -> str | None:
    """The SCORER a probe task's utils.py declares (None for tasks lm-eval scores itself)."""
    from captrack.paths import tasks_dir

    utils = Path(tasks_dir()) / task.removeprefix("captrack_") / "utils.py"
    if not utils.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_captrack_task_{task}", utils)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    found = getattr(module, "SCORER", None)
    return str(found) if found else None


def task_scorers(task: str, doc: Mapping[str, Any]) -> tuple[tuple[str, ...], Mapping[str, Any]]:
    """The scorers of `task` and the doc as they see it (official rows: flattened with their meta)."""
    if "config" in doc and task.startswith("captrack_") and not task.startswith("captrack_probe_"):
        from captrack.official.configs import get_config
        from captrack.official.tasks import scoring_doc

        try:
            return get_config(str(doc["config"])).scorers, scoring_doc(doc)
        except UnknownNameError:
            return (), doc
    found = _probe_scorer(task)
    return ((found,) if found else ()), doc


def scored_text(task: str, metric: str, doc: Mapping[str, Any], response: str, output_type: str) -> str:
    """What the page shows as the answer that was scored for `metric`.

    Multiple choice: the option the model scored highest (it generated nothing). Generation scored by
    a captrack scorer: the answer that scorer read (or that it reads the whole response). Generation
    scored by lm-eval's own metric: the response after the task's filters, which is what it compared.
    """
    if output_type == "multiple_choice":
        return response
    from captrack.metrics.registry import get_scorer, scored_answer

    names, seen = task_scorers(task, doc)
    for name in names:
        if metric in get_scorer(name)[1]:
            found = scored_answer(name, seen, response)
            return WHOLE_RESPONSE if found is None else (found or NONE_FOUND)
    return response
