"""Every scorer against its data-file cases (tests/metrics/cases/<scorer>.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from captrack.errors import UnknownNameError
from captrack.metrics import get_metric, score
from captrack.metrics.registry import SCORERS, get_scorer
from captrack.metrics.sandbox import bwrap_problem

CASES = Path(__file__).parent / "cases"


def _cases() -> list[Any]:
    params = []
    for path in sorted(CASES.glob("*.yaml")):
        for i, case in enumerate(yaml.safe_load(path.read_text())):
            params.append(pytest.param(path.stem, case, id=f"{path.stem}-{i}-{case['why'][:40]}"))
    return params


@pytest.mark.parametrize(("scorer_name", "case"), _cases())
def test_case(scorer_name: str, case: dict[str, Any]) -> None:
    if scorer_name == "code_tests" and bwrap_problem() is not None:
        pytest.skip(f"code_tests runs programs only inside bubblewrap: {bwrap_problem()}")
    got = score(scorer_name, case["doc"], case["response"])
    assert got == pytest.approx({k: float(v) for k, v in case["expected"].items()}), case["why"]


def test_every_registered_scorer_has_cases() -> None:
    get_scorer("style")  # loads the built-in scorers
    assert {p.stem for p in CASES.glob("*.yaml")} == set(SCORERS.names())


def test_unknown_metric_and_constraint_name_close_matches() -> None:
    with pytest.raises(UnknownNameError, match="did you mean 'verbosity'"):
        get_metric("verbosty")
    with pytest.raises(UnknownNameError, match="did you mean 'lowercase'"):
        score("instructions", {"constraints": [{"kind": "lowercas"}]}, "x")
