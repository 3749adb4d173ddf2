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


@pytest.mark.parametrize("command", ["ingest", "compare"])
def test_a_task_name_with_a_slash_is_one_line_naming_the_results_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    from fakeruns import FakeTask, write_run

    for name in ("base", "var"):
        results = write_run(tmp_path / name, name, [FakeTask("xq_y", {"acc": [1, 0, 1]})])
        results.write_text(results.read_text().replace('"xq_y"', '"xq/y"'))
    argv = (["ingest", str(tmp_path / "base"), "--store", str(tmp_path / "s.duckdb")] if command == "ingest" else
            ["compare", "--base", str(tmp_path / "base"), "--variant", f"var={tmp_path / 'var'}", "--out", str(tmp_path / "o")])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and "'xq/y'" in err and "results_" in err
    assert not (tmp_path / "o").exists()
