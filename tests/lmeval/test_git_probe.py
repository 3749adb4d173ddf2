"""lm-eval's git probe (``git describe --always``, for the results' ``git_hash``) prints nothing outside a git
repository (issue 51: ``fatal: not a git repository`` on every import)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.official.mirror import normalise_row, write_config

TASK = "captrack_mmlu_pro_full"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed: lm-eval's probe finds nothing to run")
def test_an_import_outside_a_git_repository_prints_no_git_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    rows = []
    for n, gold in enumerate("AB", start=1):
        row = normalise_row({"id": f"mmlu_pro-{n}", "prompt": f"question {n}", "choices": ["w", "x", "y", "z"],
                             "gold": gold, "meta": {"question_id": n, "category": "law"}}, "mmlu_pro.full")
        row["revision"] = "test-1"
        rows.append(row)
    write_config(tmp_path / "mirror", "mmlu_pro.full", rows)
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))
    for name in ("GIT_DIR", "GIT_WORK_TREE"):
        monkeypatch.delenv(name, raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert subprocess.run(["git", "rev-parse"], capture_output=True).returncode != 0  # really outside a repository
    src = work / "gens.jsonl"
    src.write_text('{"id": "mmlu_pro-1", "response": "Answer: A"}\n{"id": "mmlu_pro-2", "response": "Answer: C"}\n')
    capfd.readouterr()
    assert main(["import", "--format", "jsonl", "--task", TASK, "--out", "run", "--name", "m", str(src)]) == 0
    err = capfd.readouterr().err
    assert "not a git repository" not in err, err
    results = json.loads(next((work / "run").rglob("results_*.json")).read_text())
    assert results["git_hash"] is None  # what lm-eval records outside a repository, as before
