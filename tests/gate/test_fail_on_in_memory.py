"""`--fail-on` gates the comparison held in memory: it opens no file, not even the tables it has just written
(issue 41)."""

from __future__ import annotations

import builtins
import random
from pathlib import Path
from typing import Any

import pytest

from captrack.cli import main
from captrack.gate.fail_on import GATE_EXIT


def test_fail_on_reads_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakeruns import FakeTask, write_run

    rng = random.Random(3)
    for name, p in (("base", 0.9), ("sft", 0.3)):
        write_run(tmp_path / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": [int(rng.random() < p) for _ in range(120)]})])
    out = tmp_path / "out"
    opened: list[str] = []
    real_open = builtins.open

    def watched(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if str(file).startswith(str(out)) and "r" in mode and "+" not in mode:
            opened.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    import captrack.gate.fail_on as fail_on

    real_gate = fail_on.gate

    def gate_watching_files(*args: Any, **kwargs: Any) -> int:
        monkeypatch.setattr(builtins, "open", watched)
        try:
            return real_gate(*args, **kwargs)
        finally:
            monkeypatch.setattr(builtins, "open", real_open)

    monkeypatch.setattr(fail_on, "gate", gate_watching_files)
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"sft={tmp_path / 'sft'}", "--bootstrap", "50",
                 "--out", str(out), "--fail-on", "regressed"]) == GATE_EXIT
    assert (out / "capabilities.csv").is_file() and opened == []
