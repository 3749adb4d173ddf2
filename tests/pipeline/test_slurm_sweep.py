"""A checkpoint sweep through the slurm executor on a real single-node Slurm cluster (scripts/slurm-up.sh, `make slurm`):
its evaluations go to Slurm as one array, at most `array_parallelism` tasks at once, and the board is the local one.

The reference is the same experiment through the local executor in the same folder (every path in the board the
same). Slurm's own record of each array task is its job completion log (jobcomp/filetxt: ArrayJobId, ArrayTaskId,
StartTime, EndTime); the cluster keeps no accounting database, so sacct has nothing to say here.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from slurmcluster import ON_SLURM, array_tasks
from tinymodel import build_tiny_model

CAPTRACK = str(Path(sys.executable).with_name("captrack"))


pytestmark = ON_SLURM

SWEEP = """name: slurm-sweep
workdir: work
leaderboard: board
tasks: [captrack_probe_c1_facts]
limit: 4
batch_size: 4
base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}
variants:
  - {{name: sft, checkpoints: [{steps}], algorithm: SFT, family: tiny}}
executor: {{name: slurm, cpus: 1, time: 30, poll_s: 1, evaluate: {{gpus: 0, array_parallelism: 1}}}}
"""


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base and two saved checkpoints of a variant (tiny real models): a three-checkpoint sweep."""
    root = tmp_path_factory.mktemp("sweep")
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    build_tiny_model(root / "models" / "base", texts, seed=0)
    for step in (1, 2):
        build_tiny_model(root / "models" / "sft" / f"checkpoint-{step}", texts, seed=step)
    return root


def _fresh(place: Path, name: str = "run") -> Path:
    folder = place / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    steps = ", ".join(str(place / "models" / "sft" / f"checkpoint-{s}") for s in (1, 2))
    (folder / "exp.yaml").write_text(SWEEP.format(base=place / "models" / "base", steps=steps))
    return folder


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}
    return subprocess.run([CAPTRACK, "run", "exp.yaml", *args], cwd=folder, capture_output=True, text=True, timeout=900,
                          env=env)


def _outputs(folder: Path) -> dict[str, bytes]:
    """The board's files and every CSV of the work folder, by path."""
    files = [*(folder / "board").rglob("*"), *(folder / "work").rglob("*.csv")]
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(files) if p.is_file()}


def test_a_three_checkpoint_sweep_is_one_array_run_one_task_at_a_time_and_gives_the_local_board(place: Path) -> None:
    folder = _fresh(place)
    local = _run(folder, "--executor", "local")
    assert local.returncode == 0, local.stdout + local.stderr
    expected = _outputs(folder)
    folder = _fresh(place)
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = array_tasks(folder)
    shown = [(t["ArrayJobId"], t["ArrayTaskId"], t["JobState"], t["StartTime"], t["EndTime"]) for t in tasks]
    print("Slurm's job completion log (array job, task, state, start, end):\n" + "\n".join(map(str, shown)))
    assert len({t["ArrayJobId"] for t in tasks}) == 1 and len(tasks) == 3, shown  # one array job, three tasks
    assert sorted(t["ArrayTaskId"] for t in tasks) == ["0", "1", "2"]
    assert [t["JobState"] for t in tasks] == ["COMPLETED"] * 3
    for before, after in itertools.pairwise(tasks):  # %1: a task starts once the one before it ended
        assert after["StartTime"] >= before["EndTime"], shown
    assert "as one Slurm array" in done.stdout and "at most 1 at once" in done.stdout
    assert _outputs(folder) == expected
    assert any(name.endswith(".csv") for name in expected)


PREEMPTED = """name: slurm-preempt
workdir: work
leaderboard: board
tasks: [captrack_probe_c2_logic]
metadata: {{n: 1500}}
batch_size: 1
base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}
variants:
  - {{name: other, model_args: {{pretrained: {other}}}, algorithm: SFT, family: tiny}}
executor: {{name: slurm, cpus: 1, time: 30, poll_s: 1, signal: USR1@60, evaluate: {{gpus: 0, array_parallelism: 1}}}}
"""


def _cached(folder: Path) -> int:
    """Requests in the base's lm-eval request cache (its sqlite file; 0 before it exists)."""
    import sqlite3

    files = list((folder / "work" / "cache").glob("base-*.db"))
    if not files:
        return 0
    with sqlite3.connect(f"file:{files[0]}?mode=ro", uri=True, timeout=5) as db:
        try:
            return int(db.execute("SELECT COUNT(*) FROM unnamed").fetchone()[0])
        except sqlite3.OperationalError:  # the table is not created yet
            return 0


def _task_state(task: str) -> str:
    out = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%T", "-j", task], capture_output=True, text=True)
    return out.stdout.strip()


def _requests(log: str) -> int:
    """The requests an attempt computed: the denominator of its first "Running loglikelihood requests" bar."""
    found = re.search(r"Running loglikelihood requests:[^\n\r]*?\d+/(\d+)", log)
    assert found, log[-2000:]
    return int(found.group(1))


SETTLE_S = 3.0
"""How long a requeued job is left before the test releases it from the begin time Slurm gave it (some 2 minutes, the
job credential's lifetime): a job started again within the second its last run's credential was revoked fails to
launch ("Job credential revoked", the array task FAILED), seen when it was released at once."""


def _wait(what: str, ready: object, timeout: float = 600) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not ready():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def test_an_array_task_signalled_before_its_limit_requeues_and_resumes_from_its_request_cache(place: Path) -> None:
    """The pre-limit signal (what Slurm sends `signal:` seconds before the time limit, here sent at once with
    `scancel --signal`) mid-evaluation: the task stops, requeues itself, its second attempt computes only what the
    first did not cache, its record counts the restart, and the board is the uninterrupted local run's."""
    import json
    import time

    def fresh() -> Path:
        folder = _fresh(place)
        (folder / "exp.yaml").write_text(PREEMPTED.format(base=place / "models" / "base",
                                                          other=place / "models" / "sft" / "checkpoint-1"))
        return folder

    local = _run(fresh(), "--executor", "local")
    assert local.returncode == 0, local.stdout + local.stderr
    expected = _outputs(place / "run")
    folder = fresh()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}
    driver = subprocess.Popen([CAPTRACK, "run", "exp.yaml"], cwd=folder, stdout=(folder / "driver.log").open("w"),
                              stderr=subprocess.STDOUT, env=env)
    try:
        _wait("the base's first requests cached", lambda: _cached(folder) >= 200)
        record = next((folder / "work" / "jobs").glob("eval-base-*.record.json"))
        task = json.loads(record.read_text())["job_id"]
        subprocess.run(["scancel", "--signal=USR1", task], check=True)
        _wait("the task requeued", lambda: _task_state(task) == "PENDING", 120)
        first = _cached(folder)
        time.sleep(SETTLE_S)
        subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], check=False)  # Slurm holds it 2 min
        assert driver.wait(timeout=900) == 0, (folder / "driver.log").read_text()
    finally:
        if driver.poll() is None:
            driver.kill()
    log = (folder / "work" / "slurm" / f"{task}_0_log.out").read_text(errors="replace")
    assert "the pre-limit signal came" in log and f"Slurm job {task} (restart 1)" in log, log[-3000:]
    before, after = log.split(f"Slurm job {task} (restart 1)", 1)
    total, second = _requests(before), _requests(after)
    served = total - second
    print(f"first attempt: {first} of {total} requests cached when it was signalled; second attempt: {served} served "
          f"from the cache, {second} computed ({served / first:.0%} of the first attempt's)")
    assert first > 0 and served >= 0.9 * first and second < total
    assert json.loads(record.read_text())["restarts"] == 1
    assert _outputs(folder) == expected


TIME_LIMITED = """name: slurm-time-limit
workdir: work
leaderboard: board
tasks: [captrack_probe_c2_logic]
metadata: {{n: {n}}}
batch_size: 1
base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}
variants:
  - {{name: other, model_args: {{pretrained: {other}}}, algorithm: SFT, family: tiny}}
executor: {{name: slurm, cpus: 1, time: 2, poll_s: 1, signal: USR1@20, requeues: 30,
           evaluate: {{gpus: 0, array_parallelism: 2}}}}
"""
COMPUTE_S = 80.0
"""The base's requests in the time-limit test take this long to compute at the fastest this machine computed them just
before (forward passes, one thread). Slurm signals each attempt 70-100 s after its start (`time: 2`, `signal: USR1@20`,
its 30 s resolution), and an attempt spends its first 20-45 s starting lm-eval and building its requests: so the first
one is signalled with requests cached and requests left, on an idle machine too (20 + 80 s and lm-eval's own cost per
request, past 100 s), and under load each attempt still computes for a while. Sized from the machine's speed rather
than in items: a fixed 6,000 items of the 32-wide model took 466 s under load but 36 s on an idle 2-core EPYC, less
than an attempt's share of the limit. An earlier signal wastes more of each attempt on starting (`USR1@50`, 40-70 s
in: more than ten attempts under load); a 1-minute limit leaves no time to compute (the signal came 10-40 s into each attempt,
before the worker had started, four times, and submitit gave up: see captrack.pipeline.executors.slurm_job)."""
ITEMS_RANGE = (300, 20_000)
"""The time-limit test's items, whatever the measured speed says (a 12.5 ms request makes some 2,400 items)."""


def _heavy_model(place: Path) -> Path:
    """The tiny base widened to 512 (two layers, the same tokenizer): a request costs some 10 ms of one core's time
    against lm-eval's 2 ms of bookkeeping and request building per item, so the evaluation's length is its forward
    passes', which this test measures, and its start stays short."""
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = place / "models" / "heavy"
    if not (folder / "config.json").is_file():
        shutil.copytree(place / "models" / "base", folder)
        config = LlamaConfig.from_pretrained(folder)
        config.hidden_size, config.intermediate_size = 512, 1024
        LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def _items_for(model: Path, seconds: float) -> tuple[int, float]:
    """Probe items whose requests take `model` some `seconds` of one core's time, measured on the probe's own requests
    (its forward passes, one thread, the fastest of several rounds: lm-eval only adds to it, and a busy machine only
    stretches it in wall time), and the seconds one request took."""
    import time

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from captrack.probes import generate

    tokenizer, net = AutoTokenizer.from_pretrained(model), AutoModelForCausalLM.from_pretrained(model).eval()
    docs = generate("logic", 1234, 60)
    requests = [tokenizer(f"Question: {d['question']}\nAnswer: {c}", return_tensors="pt")["input_ids"]
                for d in docs for c in d["choices"]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rounds = []
    try:
        with torch.inference_mode():
            for start in range(0, len(requests) - 19, 20):
                began = time.process_time()
                for ids in requests[start:start + 20]:
                    net(ids)
                rounds.append((time.process_time() - began) / 20)
    finally:
        torch.set_num_threads(threads)
    per_request = min(rounds)
    items = round(seconds / (per_request * len(requests) / len(docs)))
    return min(max(items, ITEMS_RANGE[0]), ITEMS_RANGE[1]), per_request


def _queue(jobs: list[str]) -> dict[str, tuple[str, str]]:
    """Slurm's state and reason of each of `jobs` (array tasks ``A_I``) it still knows."""
    out = subprocess.run(["squeue", "-h", "-r", "-t", "all", "-o", "%i %T %r", "-j", ",".join(jobs)], capture_output=True,
                         text=True)
    return {parts[0]: (parts[1], parts[2]) for line in out.stdout.splitlines() if len(parts := line.split()) == 3}


def _computed(attempt_log: str) -> int | None:
    """The requests an attempt computed (its requests bar's total), None when it was stopped before it began them."""
    found = re.search(r"Running loglikelihood requests:[^\n\r]*?\d+/(\d+)", attempt_log)
    return int(found.group(1)) if found else None


def _follow(folder: Path, driver: subprocess.Popen[bytes]) -> tuple[str, list[int]]:
    """Until `driver` ends: release each requeued task from the begin time Slurm gives it, and note the requests in the
    base's cache each time its task stops (RUNNING to PENDING). Returns the base's task and those counts."""
    import json
    import time

    base_task, stops, ran = "", [], False
    requeued: dict[str, float] = {}  # each task Slurm holds after a requeue: when the test saw it held
    deadline = time.monotonic() + 1200
    while driver.poll() is None:
        assert time.monotonic() < deadline, (folder / "driver.log").read_text()
        records = {p.name: json.loads(p.read_text()) for p in (folder / "work" / "jobs").glob("eval-*.record.json")}
        jobs = [r["job_id"] for r in records.values() if r.get("job_id")]
        base_task = next((r["job_id"] for n, r in records.items() if n.startswith("eval-base-")), base_task)
        for job, (state, reason) in (_queue(jobs) if jobs else {}).items():
            if job == base_task and state == "RUNNING":
                ran = True
            elif job == base_task and state == "PENDING" and ran:  # requeued (by way of COMPLETING, REQUEUED...)
                stops.append(_cached(folder))
                ran = False
            if state != "PENDING" or reason != "BeginTime":
                requeued.pop(job, None)
            elif time.monotonic() - requeued.setdefault(job, time.monotonic()) >= SETTLE_S:
                subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], check=False)
        time.sleep(0.5)
    return base_task, stops


def test_an_array_task_past_its_time_limit_gets_slurm_s_signal_requeues_and_resumes_from_its_cache(place: Path) -> None:
    """A real time limit: each evaluation has a 2-minute limit and `signal: USR1@20`, and the base's computes for
    longer than an attempt's share of it (sized from this machine's speed: :data:`COMPUTE_S`). Nothing here signals a
    job: Slurm sends USR1 itself 20-50 s before the limit; the task requeues (as often as it takes), each attempt
    serves what the ones before it finished from the request cache, and the board is the uninterrupted local run's,
    made meanwhile in another folder at a lower priority (on the core the Slurm run leaves idle once its other task is
    done). (A requeued job waits for a begin time Slurm sets some 2 minutes ahead; the test releases it sooner.)"""
    import time

    heavy = _heavy_model(place)
    items, per_request = _items_for(heavy, COMPUTE_S)
    print(f"one request of the base takes {per_request * 1000:.1f} ms of one core here: {items} items, some "
          f"{COMPUTE_S:.0f} s of computing")
    folders = [_fresh(place, name) for name in ("run", "local")]
    for folder in folders:
        (folder / "exp.yaml").write_text(TIME_LIMITED.format(n=items, base=heavy,
                                                             other=place / "models" / "sft" / "checkpoint-1"))
    folder, reference = folders
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}
    began = time.monotonic()
    driver = subprocess.Popen([CAPTRACK, "run", "exp.yaml"], cwd=folder, stdout=(folder / "driver.log").open("w"),
                              stderr=subprocess.STDOUT, env=env)
    local = subprocess.Popen([CAPTRACK, "run", "exp.yaml", "--executor", "local"], cwd=reference, env=env,
                             stdout=(reference / "driver.log").open("w"), stderr=subprocess.STDOUT,
                             preexec_fn=lambda: os.nice(10))
    try:
        base_task, stops = _follow(folder, driver)
        slurm_s = time.monotonic() - began
        assert driver.returncode == 0, (folder / "driver.log").read_text()
        assert local.wait(timeout=900) == 0, (reference / "driver.log").read_text()
    finally:
        for process in (driver, local):
            if process.poll() is None:
                process.kill()
    print(f"Slurm run {slurm_s:.0f} s; both runs {time.monotonic() - began:.0f} s; uninterrupted local run:",
          *[line.strip() for line in (reference / "driver.log").read_text().splitlines() if " s  evaluate" in line])
    log = (folder / "work" / "slurm" / f"{base_task}_0_log.out").read_text(errors="replace")
    assert "the pre-limit signal came" in log and f"Slurm job {base_task} (restart 1)" in log, log[-3000:]
    attempts = [_computed(a) for a in re.split(r"captrack: Slurm job \S+ \(restart \d+\)", log)[1:]]
    total = _cached(folder)  # at the end every request is in the cache
    # The first attempt that began with requests cached (by the attempts Slurm's signal stopped before it) and got to
    # its requests (an attempt signalled while it started computes none):
    resumed = [j for j in range(1, len(attempts)) if j <= len(stops) and stops[j - 1] > 0 and attempts[j] is not None]
    assert resumed, f"no attempt resumed from a cache: requests left {attempts}, cached at each stop {stops}"
    j = resumed[0]
    computed, cached = attempts[j], stops[j - 1]
    assert computed is not None
    served = total - computed
    print(f"base's array task {base_task}: {len(attempts)} attempts, requests each had left to compute {attempts} "
          f"(None: stopped before it computed), cached at each stop {stops}, {total} in all; attempt {j} was stopped by "
          f"Slurm's pre-limit signal with {cached} cached; attempt {j + 1} served {served} from the cache and computed "
          f"{computed} ({served / cached:.0%} of what was cached)")
    assert served >= 0.9 * cached and computed < total
    assert _outputs(folder) == _outputs(reference)
