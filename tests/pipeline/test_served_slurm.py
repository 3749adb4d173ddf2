"""Served evaluation inside a Slurm job (issue 55) on the single-node cluster of scripts/slurm-up.sh (`make slurm`).

`captrack run` through the slurm executor on SmolLM2-135M-Instruct (float32): the base evaluated by hf, the variant the
same weights with ``model: vllm, serve: vllm``, so its job starts the CPU vLLM server, evaluates through lm-eval's
``local-completions`` and stops it. The run ends 0 with a board; the variant's multiple-choice decisions equal the
base's item by item; the server's log lies beside the Slurm job's log; no server process or listening port remains.
One vLLM engine start (60-150 s on 2 loaded cores) and Slurm's polling: `slow`. Skips without the cluster or the vLLM
environment (the reason said).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from servercheck import CAPTRACK_RUN, NEEDS_SMOLLM2, SERVING, no_server_left, served_env
from slurmcluster import ON_SLURM
from vllmenv import VLLM_IN_SLURM

pytestmark = [*ON_SLURM, VLLM_IN_SLURM, pytest.mark.timeout(1800), NEEDS_SMOLLM2]

TASK = "captrack_probe_w1_choice"




def _experiment(folder: Path, limit: int) -> None:
    """The base by hf, the variant the same weights served by vLLM, both as Slurm jobs."""
    from captrack.lmeval.vllm_env import unavailable_reason, vllm_python
    from captrack.models import resolve_model

    if unavailable_reason() is not None or vllm_python() is None:
        pytest.skip(f"no vLLM environment: {unavailable_reason() or '`make vllm-venv` builds it'}")
    model = resolve_model("smollm2-135m-instruct")
    (folder / "exp.yaml").write_text(
        f"name: served-slurm\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: {limit}\nbatch_size: 1\n"
        f"base: {{name: base, model_args: {{pretrained: {model}, dtype: float32}}}}\n"
        f"variants:\n  - {{name: served, model: vllm, serve: vllm, algorithm: none, model_args: {{pretrained: {model}, "
        "dtype: float32, max_model_len: 1024, enforce_eager: true}}\n"
        "executor: {name: slurm, gpus: 0, cpus: 2, time: 30, poll_s: 2}\n")


def test_a_served_checkpoint_evaluates_inside_a_slurm_job_and_leaves_no_server(tmp_path: Path) -> None:
    _experiment(tmp_path, 4)
    done = subprocess.run(CAPTRACK_RUN, cwd=tmp_path, capture_output=True, text=True, timeout=1700, env=served_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert (tmp_path / "board" / "index.html").is_file()
    server_logs = [p for p in (tmp_path / "work").rglob("*.vllm-server.log")]
    assert len(server_logs) == 1 and "Application startup complete" in server_logs[0].read_text(errors="replace")
    ports = {int(m) for p in server_logs[0].parent.iterdir() if p.is_file() and p != server_logs[0]
             for m in re.findall(SERVING, p.read_text(errors="replace"))}
    assert len(ports) == 1, sorted(server_logs[0].parent.iterdir())  # the job's log, beside the server's
    (port,) = ports
    no_server_left(port)
    decisions = {}
    for name in ("base", "served"):
        (samples,) = (tmp_path / "work" / "runs" / name).rglob(f"samples_{TASK}_*.jsonl")
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        decisions[name] = {r["doc_id"]: max(range(len(r["resps"])), key=lambda i, r=r: float(r["resps"][i][0][0]))
                           for r in rows}
    assert decisions["served"] == decisions["base"] and len(decisions["base"]) == 4


def test_scancel_of_a_served_job_while_it_evaluates_leaves_no_server(tmp_path: Path) -> None:
    _experiment(tmp_path, 200)
    driver = subprocess.Popen(CAPTRACK_RUN, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=served_env(),
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # Ctrl-C as at a terminal
    try:
        deadline = time.monotonic() + 1200
        while True:  # the served job's log, once lm-eval sends its requests
            logs = [p for p in (tmp_path / "work").rglob("*_log.out")
                    if "Requesting API:" in p.read_text(errors="replace")]
            if logs:
                break
            assert driver.poll() is None and time.monotonic() < deadline, "the served job never evaluated"
            time.sleep(2)
        text = logs[0].read_text(errors="replace")
        port, job = int(re.findall(SERVING, text)[0]), re.findall(r"captrack: Slurm job (\S+) ", text)[0]
        subprocess.run(["scancel", job], check=True, timeout=60)
        no_server_left(port, wait_s=90)  # Slurm's SIGTERM reaches the job's worker: it stops its server
    finally:
        driver.send_signal(signal.SIGINT)  # the driver cancels what is left of the run
        try:
            driver.wait(timeout=120)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait()
