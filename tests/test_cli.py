"""The `captrack` and `captrack-eval` command lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.cli import _split_variant, main
from captrack.lmeval.integration import _with_include_path
from captrack.paths import tasks_dir


def test_tasks_path_and_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks", "--path"]) == 0
    assert Path(capsys.readouterr().out.strip()) == Path(tasks_dir())
    assert main(["tasks"]) == 0
    listing = capsys.readouterr().out
    assert "captrack_probe_c1_facts" in listing and "captrack-c1" in listing


def test_include_path_is_added_or_extended() -> None:
    ours = tasks_dir()
    assert _with_include_path(["run", "--tasks", "x"]) == ["run", "--tasks", "x", "--include_path", ours]
    assert _with_include_path(["--include_path", "/mine", "--tasks", "x"]) == [
        "--include_path", f"/mine{os.pathsep}{ours}", "--tasks", "x",
    ]
    assert _with_include_path([]) == []


@pytest.mark.parametrize(
    ("text", "with_dir", "expected"),
    [
        ("sft=runs/sft:SFT", True, ("sft", "runs/sft", "SFT")),
        ("sft=runs/sft", True, ("sft", "runs/sft", "")),
        ("dpo:DPO", False, ("dpo", "", "DPO")),
    ],
)
def test_variant_specs(text: str, with_dir: bool, expected: tuple[str, str, str]) -> None:
    assert _split_variant(text, with_dir) == expected


def test_compare_without_inputs_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--out", str(tmp_path)]) == 1
    assert "needs --base" in capsys.readouterr().err


def test_captrack_eval_validates_our_tasks_and_a_users_folder(tmp_path: Path) -> None:
    mine = tmp_path / "mytasks" / "extra"
    mine.mkdir(parents=True)
    (mine / "extra.yaml").write_text((Path(tasks_dir()) / "probe_c1_facts" / "probe_c1_facts.yaml").read_text()
                                     .replace("task: captrack_probe_c1_facts", "task: my_extra_task")
                                     .replace("tag: [captrack, captrack-can, captrack-c1]", "tag: [mine]"))
    (mine / "utils.py").write_text((Path(tasks_dir()) / "probe_c1_facts" / "utils.py").read_text())
    out = subprocess.run(
        [sys.executable, "-c", "from captrack.lmeval import main; main()", "validate",
         "--tasks", "captrack_probe_c1_facts,my_extra_task", "--include_path", str(tmp_path / "mytasks")],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "my_extra_task" in out.stdout + out.stderr
