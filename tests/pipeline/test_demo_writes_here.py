"""`captrack run` without an experiment (the embedded demo, with --quick too) plans and writes under the current folder,
never into the checkout the package runs from (issue 51)."""

from __future__ import annotations

from pathlib import Path

import pytest

import captrack
from captrack.cli import main

CHECKOUT = Path(captrack.__file__).resolve().parents[1]


@pytest.mark.parametrize(("flags", "workdir", "board"), [([], "demo", "leaderboards/demo"),
                                                          (["--quick"], "demo-quick", "runs/demo-quick/leaderboard")])
def test_the_demo_plans_under_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], flags: list[str], workdir: str,
                                                 board: str) -> None:
    import captrack.models

    monkeypatch.setattr(captrack.models, "resolve_model", lambda spec: pytest.fail(f"a dry run resolved {spec}"))
    before = (CHECKOUT / "runs" / workdir).exists()
    monkeypatch.chdir(tmp_path)
    assert main(["run", *flags, "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"work folder {tmp_path / 'runs' / workdir}, leaderboard {tmp_path / board}" in out
    assert list(tmp_path.iterdir()) == []  # a dry run writes nothing
    assert (CHECKOUT / "runs" / workdir).exists() == before  # nor anything in the checkout
