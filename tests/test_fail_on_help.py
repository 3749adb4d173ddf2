"""`--fail-on`'s help says the rule the gate applies and README states: Holm's step-down test at a family-wise error of
2.5% per variant, not every `regressed` cell (issue 51)."""

from __future__ import annotations

import pytest

from captrack.cli import main


@pytest.mark.parametrize("command", ["compare", "run"])
def test_fail_on_help_states_the_holm_rule(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    start = text.index("--fail-on {regressed,inconclusive} exit 3")
    helped = text[start:text.index("--gate POLICY.yaml", start)]
    assert "whose verdict is regressed" not in helped and "cells with this verdict" not in helped
    for rule in ("Holm's step-down test", "family-wise error of 2.5% per variant", "not every `regressed` cell fails",
                 "inconclusive: those and every `inconclusive` cell"):
        assert rule in helped, helped
