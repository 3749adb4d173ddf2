"""A backend's A/A floor pair (algorithm `floor`, captrack/pipeline/floor.py) is a reference, not a variant: `--fail-on`
and a gate policy leave its rows out and say so, while the same regression under another algorithm fails (issue 54)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.gate.fail_on import GATE_EXIT


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fakeruns import FakeTask, write_run

    root = tmp_path_factory.mktemp("floor-gate")
    rng = random.Random(3)
    scores = {name: [int(rng.random() < p) for _ in range(120)] for name, p in (("base", 0.9), ("worse", 0.3))}
    for name, acc in (*scores.items(), ("same", scores["base"])):  # `same`: a variant that changed nothing
        write_run(root / name, name, [FakeTask("captrack_probe_c1_facts", {"acc": acc})])
    return root


@pytest.mark.parametrize(("algorithm", "status"), [("floor", 0), ("SFT", GATE_EXIT)])
def test_fail_on_leaves_the_floor_out(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], algorithm: str,
                                      status: int) -> None:
    assert main(["compare", "--base", str(runs / "base"), "--variant", f"worse={runs / 'worse'}:{algorithm}",
                 "--variant", f"same={runs / 'same'}:SFT", "--bootstrap", "50", "--out", str(tmp_path / "out"), "--fail-on", "regressed"]) == status
    said = capsys.readouterr()
    assert ("not gated: worse (algorithm floor" in said.err + said.out) == (algorithm == "floor")


@pytest.mark.parametrize(("algorithm", "status"), [("floor", 0), ("SFT", GATE_EXIT)])
def test_a_gate_policy_over_a_folder_leaves_the_floor_out(runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          algorithm: str, status: int) -> None:
    out = tmp_path / "out"
    main(["compare", "--base", str(runs / "base"), "--variant", f"worse={runs / 'worse'}:{algorithm}", "--variant",
          f"same={runs / 'same'}:SFT", "--bootstrap", "50", "--out", str(out)])
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules: [{task: captrack_probe_c1_facts, tier: critical}]\n")
    capsys.readouterr()
    assert main(["gate", str(policy), str(out)]) == status
    said = capsys.readouterr()
    assert ("not gated: worse (algorithm floor" in said.err + said.out) == (algorithm == "floor")
