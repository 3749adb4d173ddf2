"""A checkpoint sweep with a served model through Slurm (issue 55), on the single-node cluster of scripts/slurm-up.sh.

Three checkpoints of SmolLM2-135M-Instruct (float32): the base and two saved steps of a variant (its weights, linked,
with another ``rope_theta`` each, so every checkpoint answers differently), all ``model: vllm, serve: vllm``. Through
the slurm executor they are one array run one task at a time (``array_parallelism: 1``); each task starts the CPU
vLLM server, evaluates through lm-eval's ``local-completions`` and stops it. The reference is the same sweep evaluated
in-process by vLLM (``model: vllm`` without ``serve``, local executor). Then the driver of a fresh run is killed
(SIGKILL) while its first task evaluates, its array cancelled (``scancel``), and no server may remain.
Seven vLLM engine starts in all (60-150 s each on 2 loaded cores): `slow`. Skips without the cluster or the vLLM
environment (the reason said).
"""

from __future__ import annotations

import itertools
import json
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from servercheck import CAPTRACK_RUN, NEEDS_SMOLLM2, SERVING, no_server_left, served_env
from slurmcluster import ON_SLURM, array_tasks
from vllmenv import VLLM_IN_SLURM

pytestmark = [*ON_SLURM, VLLM_IN_SLURM, pytest.mark.timeout(3600), NEEDS_SMOLLM2]

TASK = "captrack_probe_w1_choice"
NUL = b"\0"
ARGS = "dtype: float32, max_model_len: 1024, enforce_eager: true"
SWEEP = """name: served-sweep
workdir: work
leaderboard: board
tasks: [{task}]
limit: 8
batch_size: 1
base: {{name: base, model: vllm, {serve}model_args: {{pretrained: {base}, {args}}}}}
variants:
  - {{name: sft, model: vllm, {serve}algorithm: SFT, checkpoints: [{steps}], model_args: {{{args}}}}}
executor: {{name: slurm, gpus: 0, cpus: 2, time: 30, poll_s: 2, evaluate: {{array_parallelism: 1}}}}
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """SmolLM2 and two 'saved steps' of it (its files linked, config.json with another rope_theta)."""
    from captrack.lmeval.vllm_env import unavailable_reason, vllm_python
    from captrack.models import resolve_model

    if unavailable_reason() is not None or vllm_python() is None:
        pytest.skip(f"no vLLM environment: {unavailable_reason() or '`make vllm-venv` builds it'}")
    base = resolve_model("smollm2-135m-instruct")
    root = tmp_path_factory.mktemp("served-sweep")
    steps = []
    for step, theta in ((1, 50_000.0), (2, 20_000.0)):
        folder = root / "sft" / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        for file in base.iterdir():
            if file.suffix in (".safetensors", ".jinja") or file.name.startswith(("tokenizer", "special", "generation")):
                (folder / file.name).symlink_to(file)
        config = json.loads((base / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, "rope_theta": theta}))
        steps.append(folder)
    return base, steps


def _sweep(folder: Path, models: tuple[Path, list[Path]], served: bool) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    base, steps = models
    (folder / "exp.yaml").write_text(SWEEP.format(task=TASK, base=base, steps=", ".join(map(str, steps)), args=ARGS,
                                                  serve="serve: vllm, " if served else ""))
    return folder


def _answers(folder: Path) -> dict[str, dict[int, tuple[int, list[float]]]]:
    """Each checkpoint's per-item decision and choice loglikelihoods, by its run folder."""
    found = {}
    for samples in sorted((folder / "work" / "runs").rglob(f"samples_{TASK}_*.jsonl")):
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        scores = {r["doc_id"]: [float(resp[0][0]) for resp in r["resps"]] for r in rows}
        found[str(samples.parent.relative_to(folder))] = {
            doc: (max(range(len(s)), key=s.__getitem__), s) for doc, s in scores.items()}
    return found


def _no_vllm_process_of(*roots: Path) -> None:
    """No process of the vLLM environment (a server, its engine, a guard, a worker) runs with a path under `roots` (this
    test's folders and checkpoints) in its command line."""
    left = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = cmdline.read_bytes()
        except OSError:
            continue
        if any(str(root).encode() in words for root in roots) and b"vllm" in words:
            left.append(f"{cmdline.parent.name}: {words.replace(NUL, b' ')[:200]!r}")
    assert left == []


def test_a_served_three_checkpoint_sweep_is_one_slurm_array_with_in_process_vllm_s_answers(
        models: tuple[Path, list[Path]], tmp_path: Path) -> None:
    began = time.monotonic()
    reference = subprocess.run([*CAPTRACK_RUN, "--executor", "local"], cwd=_sweep(tmp_path / "local", models, False),
                               capture_output=True, text=True, timeout=1700, env=served_env())
    assert reference.returncode == 0, (reference.stdout + reference.stderr)[-4000:]
    local_s, began = time.monotonic() - began, time.monotonic()
    folder = _sweep(tmp_path / "slurm", models, True)
    done = subprocess.run(CAPTRACK_RUN, cwd=folder, capture_output=True, text=True, timeout=1700, env=served_env())
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    print(f"in-process vLLM, local executor: {local_s:.0f} s; served through Slurm: {time.monotonic() - began:.0f} s")
    tasks = array_tasks(folder)
    shown = [(t["ArrayJobId"], t["ArrayTaskId"], t["JobState"], t["StartTime"], t["EndTime"]) for t in tasks]
    print("Slurm's job completion log (array job, task, state, start, end):\n" + "\n".join(map(str, shown)))
    assert len({t["ArrayJobId"] for t in tasks}) == 1 and [t["JobState"] for t in tasks] == ["COMPLETED"] * 3, shown
    assert all(after["StartTime"] >= before["EndTime"] for before, after in itertools.pairwise(tasks)), shown
    logs = sorted((folder / "work").rglob("*.vllm-server.log"))
    ports = {int(p) for log in (folder / "work" / "slurm").glob("*_log.out")
             for p in re.findall(SERVING, log.read_text(errors="replace"))}
    assert len(logs) == 3 and len(ports) >= 1, (logs, ports)  # one server per task, its log beside the task's
    for port in ports:
        no_server_left(port)
    _no_vllm_process_of(tmp_path, models[1][0].parents[1])
    served, in_process = _answers(folder), _answers(tmp_path / "local")
    assert sorted(served) == sorted(in_process) and len(served) == 3, (sorted(served), sorted(in_process))
    for run, items in served.items():
        gap = max(abs(a - b) for doc, (_, s) in items.items() for a, b in zip(s, in_process[run][doc][1], strict=True))
        same = sum(items[doc][0] == in_process[run][doc][0] for doc in items)
        print(f"{run}: {same} of {len(items)} decisions the same as in-process vLLM's; largest loglikelihood gap {gap:.2e}")
    assert {run: {d: a[0] for d, a in items.items()} for run, items in served.items()} == \
        {run: {d: a[0] for d, a in items.items()} for run, items in in_process.items()}
    assert len({json.dumps(items, sort_keys=True) for items in served.values()}) == 3  # three checkpoints, three answers


def test_killing_the_sweep_s_driver_and_cancelling_its_array_leaves_no_server(
        models: tuple[Path, list[Path]], tmp_path: Path) -> None:
    folder = _sweep(tmp_path / "killed", models, True)
    driver = subprocess.Popen(CAPTRACK_RUN, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=served_env())
    try:
        deadline = time.monotonic() + 1200
        while True:  # the first task's log, once lm-eval sends its requests to the server
            logs = [p for p in (folder / "work").rglob("*_log.out") if "Requesting API:" in p.read_text(errors="replace")]
            if logs:
                break
            assert driver.poll() is None and time.monotonic() < deadline, "the served task never evaluated"
            time.sleep(2)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=60)
        text = logs[0].read_text(errors="replace")
        port, task = int(re.findall(SERVING, text)[0]), re.findall(r"captrack: Slurm job (\S+) ", text)[0]
        array = task.split("_")[0]
        subprocess.run(["scancel", array], check=True, timeout=60)  # the whole array: its pending tasks too
        no_server_left(port, wait_s=90)  # Slurm's SIGTERM reaches the task's worker: it stops its server
        deadline = time.monotonic() + 120
        while subprocess.run(["squeue", "-h", "-j", array], capture_output=True, text=True).stdout.strip():
            assert time.monotonic() < deadline, "the cancelled array is still queued"
            time.sleep(1)
        _no_vllm_process_of(tmp_path, models[1][0].parents[1])
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
