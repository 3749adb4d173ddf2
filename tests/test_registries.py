"""Every registry refuses a second registration of a name, through the one shared rule."""

from __future__ import annotations

import pytest

from captrack.errors import CaptrackError
from captrack.metrics.instructions import CONSTRAINTS, constraint
from captrack.metrics.registry import get_scorer, scorer
from captrack.registries import add_once


def test_add_once_keeps_the_first_and_names_the_registry() -> None:
    table = {"a": 1}
    add_once(table, "b", 2, "thing")
    with pytest.raises(CaptrackError, match="thing 'a' is registered twice"):
        add_once(table, "a", 3, "thing")
    assert table == {"a": 1, "b": 2}


def test_real_registries_refuse_a_second_registration() -> None:
    name = next(iter(CONSTRAINTS))
    first = CONSTRAINTS[name]
    with pytest.raises(CaptrackError, match=rf"constraint '{name}' is registered twice"):
        constraint(name)(lambda response, params: True)
    assert CONSTRAINTS[name] is first
    registered = get_scorer("style")  # loads the built-in scorers
    with pytest.raises(CaptrackError, match="scorer 'style' is registered twice"):
        scorer("style", ["verbosity"])(lambda doc, response: {})
    assert get_scorer("style") == registered


def test_every_scorer_module_is_listed_once_and_loading_is_acyclic() -> None:
    """A module that registers scorers must be in SCORER_MODULES; importing it alone first works (no cycle)."""
    import re
    import subprocess
    import sys
    from pathlib import Path

    from captrack.metrics.registry import SCORER_MODULES

    folder = Path(__file__).parents[1] / "captrack" / "metrics"
    registering = sorted(p.stem for p in folder.glob("*.py") if re.search(r"^@scorer\(", p.read_text(), re.M))
    assert sorted(SCORER_MODULES) == registering
    for module in SCORER_MODULES:  # each scorer module imported first, in a fresh interpreter
        code = f"import captrack.metrics.{module}; from captrack.metrics.registry import get_scorer, all_metrics; all_metrics()"
        assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0, module
