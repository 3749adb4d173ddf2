"""A task name read from an imported file reaches the terminal only through captrack.report.escape.console_text /
terminal_text: an ANSI escape in it is shown as text (``\\x1b``), never sent, by `captrack import` and by
`captrack compare`'s console lines. The NeMo bundles are written by hand (the reader's keys only; NeMo Evaluator's
own writer needs Python 3.12 and would not write such a name).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.report import escape

EVIL = "evil\x1b[31mRED\x1b]0;title\x07\x9b2J"


def _bundle(folder: Path, model: str) -> Path:
    folder.mkdir(parents=True)
    bundle = {"benchmark": {"name": f"lm-eval://{EVIL}"}, "config": {"model": model}, "n_results": 20}
    (folder / "eval-1.json").write_text(json.dumps(bundle), encoding="utf-8")
    rows = [{"problem_idx": i, "reward": float((i + (model == "cand")) % 3 == 0)} for i in range(20)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def test_control_characters_are_shown_never_sent() -> None:
    assert escape.terminal_text(EVIL) == "evil\\x1b[31mRED\\x1b]0;title\\x07\\x9b2J"
    assert escape.terminal_text("tab\tand\nnewline kept, [x] too") == "tab\tand\nnewline kept, [x] too"
    assert escape.console_text("a\x1b[1m[bold]b") == "a\\x1b[1m\\[bold]b"


def test_import_and_compare_print_an_imported_task_name_without_its_escapes(tmp_path: Path,
                                                                             capfd: pytest.CaptureFixture[str]) -> None:
    for model in ("base", "cand"):
        src = _bundle(tmp_path / "src" / model, model)
        assert main(["import", str(src), "--format", "nemo", "--out", str(tmp_path / model)]) == 0
    said = capfd.readouterr()
    assert "evil\\x1b[31mRED" in said.out
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(tmp_path / "cmp"), "--bootstrap", "0"]) == 0
    compared = capfd.readouterr()
    assert "evil\\x1b[31mRED" in compared.err  # the taxonomy warning names the task
    for text in (said.out, said.err, compared.out, compared.err):
        assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text
