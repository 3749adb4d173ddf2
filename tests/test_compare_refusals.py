"""compare refuses up front what it cannot do, before writing anything (issue 40): a gate on aggregate-only scores,
a task name that cannot name a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.cli import main

SCORES = "model,task,metric,value,base\nb,captrack_probe_c1_facts,acc,0.5,\nv,captrack_probe_c1_facts,acc,0.4,b\n"


@pytest.mark.parametrize("verdict", ["regressed", "inconclusive"])
def test_fail_on_with_aggregate_scores_is_refused_before_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], verdict: str) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text(SCORES)
    assert main(["compare", "--scores", str(scores), "--out", str(tmp_path / "out"), "--fail-on", verdict]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--fail-on" in err and "aggregates only" in err and "nothing was written" in err
    assert not (tmp_path / "out").exists()
