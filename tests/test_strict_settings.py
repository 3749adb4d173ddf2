"""`compare --strict` compares every setting that changes the prompt or the scoring (system instruction, few-shot
as multi-turn, max_length among them), and says what it could not check: a results file moved since ingest
(issue 40: these passed silently)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

FACTS = "captrack_probe_c1_facts"


def _runs(tmp_path: Path, change: dict[str, Any] | None = None) -> None:
    for name in ("base", "var"):
        results = write_run(tmp_path / name, name, [FakeTask(FACTS, {"acc": [1, 0, 1, 1]})])
        if name == "var" and change:
            data = json.loads(results.read_text())
            for key, value in change.items():
                if key == "model_args":
                    data.setdefault("config", {})["model_args"] = value
                else:
                    data[key] = value
            results.write_text(json.dumps(data))


@pytest.mark.parametrize(("change", "said"), [
    ({"system_instruction": "You are a pirate.", "system_instruction_sha": "abc123"}, "system instruction"),
    ({"fewshot_as_multiturn": True}, "few-shot as multi-turn"),
    ({"model_args": "pretrained=x,max_length=512"}, "max length"),
], ids=["system-instruction", "fewshot-as-multiturn", "max-length"])
def test_strict_refuses_a_setting_that_changes_the_prompt(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], said: str) -> None:
    _runs(tmp_path, change)
    argv = ["compare", "--base", str(tmp_path / "base"), "--variant", f"var={tmp_path / 'var'}",
            "--out", str(tmp_path / "out"), "--bootstrap", "0", "--strict"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"{said} differs" in " ".join(err.split()) and not (tmp_path / "out").exists()


def test_the_same_settings_pass_strict(tmp_path: Path) -> None:
    _runs(tmp_path)
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"var={tmp_path / 'var'}",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0", "--strict"]) == 0


def test_strict_says_it_cannot_check_a_results_file_moved_since_ingest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _runs(tmp_path)
    store = tmp_path / "s.duckdb"
    for name in ("base", "var"):
        assert main(["ingest", str(tmp_path / name), "--store", str(store), "--name", name]) == 0
    (tmp_path / "var").rename(tmp_path / "moved")
    capsys.readouterr()
    assert main(["compare", "--store", str(store), "--base", "base", "--variant", "var",
                 "--out", str(tmp_path / "out"), "--bootstrap", "0", "--strict"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "settings not checked" in err and "moved" in err
