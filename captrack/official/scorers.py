"""Which scorers score a task, known where the tasks are: a probe task's utils.py declares its ``SCORER``, an
official task's row names its config (captrack.official.configs). The metrics layer is handed them
(captrack.metrics.scored), never reaches up for them."""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from captrack.errors import UnknownNameError
from captrack.metrics.scored import scored_text

__all__ = ["scored_answer_text", "task_scorers"]


@lru_cache(maxsize=256)
def _probe_scorer(task: str) -> str | None:
    """The SCORER a probe task's utils.py declares (None for tasks lm-eval scores itself)."""
    from captrack.paths import tasks_dir

    utils = Path(tasks_dir()) / task.removeprefix("captrack_") / "utils.py"
    if not utils.is_file():
        return None
    source = utils.read_text(encoding="utf-8")
    if "SCORER" not in source:
        return None
    for node in ast.parse(source).body:  # a literal ``SCORER = "name"``: read without running the module (whose
        # imports, lm-eval's among them, cost seconds the first time a comparison asks)
        if (isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SCORER"]
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            return node.value.value or None
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


def scored_answer_text(task: str, metric: str, doc: Mapping[str, Any], response: str, output_type: str) -> str:
    """What the page shows as the answer `task`'s scorer read for `metric` (captrack.metrics.scored.scored_text)."""
    scorers, seen = task_scorers(task, doc)
    return scored_text(metric, scorers, seen, response, output_type)
