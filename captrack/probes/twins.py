"""Forced-choice twins and the generative tasks they twin, declared once: each forced-choice task's utils.py says
``TWIN_OF = "captrack_probe_..."`` (or a tuple, the task it pairs with item by item first). Everything that pairs
twins (tests, the agreement and cost benchmarks, docs) reads it here, never restates it."""

from __future__ import annotations

import ast
from pathlib import Path

from captrack.errors import InputError
from captrack.paths import tasks_dir

__all__ = ["forced_choice_twins"]


def forced_choice_twins(folder: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """Each forced-choice task -> the generative task(s) it twins, from the task folders' utils.py (read, not run).

    Raises:
        InputError: a TWIN_OF that is not a task name or a tuple of task names (file named).
    """
    found: dict[str, tuple[str, ...]] = {}
    for utils in sorted(Path(folder or tasks_dir()).glob("*/utils.py")):
        for node in ast.parse(utils.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "TWIN_OF" for t in node.targets):
                found[f"captrack_{utils.parent.name}"] = _names(node.value, utils)
    return found


def _names(value: ast.expr, where: Path) -> tuple[str, ...]:
    items = value.elts if isinstance(value, ast.Tuple) else [value]
    names = tuple(item.value for item in items if isinstance(item, ast.Constant) and isinstance(item.value, str))
    if len(names) != len(items) or not names or not all(n.startswith("captrack_") for n in names):
        raise InputError(f"{where}: TWIN_OF must be a captrack task name or a tuple of them, e.g. "
                         "TWIN_OF = \"captrack_probe_w1_harmful\"")
    return names
