"""The contract files of `captrack compare` on a fixed fixture are byte-identical to pinned copies.

Refactors must not move a number: this fixture (two variants, two replicates, a multiple-choice task
with per-choice loglikelihoods, a lower-is-better metric, a neutral count metric, NaN items) is
compared and every contract CSV is checked against tests/analysis/golden/: the same bytes once every
number is written to 12 significant digits (the last bits of a softmax differ between CPUs' vector
paths; nothing a refactor moves hides there). When a change
is meant to alter outputs, regenerate with ``CAPTRACK_UPDATE_GOLDEN=1 pytest tests/analysis/test_golden_outputs.py``
and say why in the commit.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

GOLDEN = Path(__file__).parent / "golden"
CONTRACT = ["transitions.csv", "drift.csv", "capabilities.csv", "replicates.csv",
            "captrack_compatible.csv", "captrack_compatible_std.csv", "distribution.csv",
            "distribution_items.csv", "calibration.csv", "distribution_by_algorithm.csv", "power.csv", "rankings.csv"]


_NUMBER = re.compile(r"-?\d+\.\d+(?:[eE][-+]?\d+)?")


def _canonical(text: str) -> str:
    """`text` with every decimal number rounded to 12 significant digits."""
    return _NUMBER.sub(lambda m: f"{float(m.group()):.12g}", text)


def _tasks(model: str, seed: int) -> list[FakeTask]:
    shift = {"base": 0, "sft": 1, "rl": 2}[model] + seed
    n = 12
    acc = [1.0 if (i * 7 + shift * 3) % 5 < 3 else 0.0 for i in range(n)]
    lls = {i: [-(0.2 + ((i + shift) % 4)), -1.0 - (i % 3), -2.0 + 0.1 * shift, -3.0] for i in range(n)}
    refusal = [float((i + shift) % 3 == 0) for i in range(n)]
    words = [10.0 + ((i * 13 + shift * 5) % 17) for i in range(n)]
    skills = [1.0 if (i + shift) % 4 else 0.0 for i in range(n)]
    skills[3] = None  # type: ignore[call-overload]  # unscored item: excluded from pairing, counted
    return [
        FakeTask("captrack_probe_c1_facts", {"acc": acc}, choice_lls=lls),
        FakeTask("captrack_probe_c1_skills", {"exact_match": skills}, output_type="generate_until"),
        FakeTask("captrack_probe_w1_benign", {"compliance_rate": refusal}, output_type="generate_until"),
        FakeTask("captrack_probe_w2_false_premise", {"overreach": [1.0 - r for r in refusal]}, output_type="generate_until"),
        FakeTask("captrack_probe_w3_style", {"verbosity": words}, output_type="generate_until"),
    ]


def _write_all(root: Path) -> dict[str, Path]:
    folders = {}
    for model in ("base", "sft", "rl"):
        for seed in (1, 2):
            write_run(root / model, model, _tasks(model, seed), seed=seed, date_id=f"2026-01-01T00-00-0{seed}.000000")
        folders[model] = root / model
    return folders


def test_compare_outputs_are_pinned(tmp_path: Path) -> None:
    runs = _write_all(tmp_path / "runs")
    out = tmp_path / "out"
    code = main(["compare", "--base", str(runs["base"]), "--variant", f"sft={runs['sft']}:SFT",
                 "--variant", f"rl={runs['rl']}:RL", "--out", str(out), "--bootstrap", "200", "--seed", "3"])
    assert code == 0
    if os.environ.get("CAPTRACK_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        for name in CONTRACT:
            (GOLDEN / name).write_bytes((out / name).read_bytes())
        pytest.skip("golden files regenerated")
    for name in CONTRACT:
        assert _canonical((out / name).read_text()) == _canonical((GOLDEN / name).read_text()), f"{name} changed"
