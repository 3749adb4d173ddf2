"""The slurm executor's per-stage resources, arrays and pre-limit signal, without a cluster: the batch script submitit
writes (its own renderer), a stand-in sbatch/sinfo on PATH where a command must answer, and the job side's handling of
its signal with real processes."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from captrack.errors import InputError, UnknownNameError
from captrack.pipeline.executors.slurm import SlurmExecutor
from captrack.pipeline.executors.slurm_resources import (
    launch_python,
    sbatch_parameters,
    stage_options,
)
from captrack.pipeline.jobs import Needs, StageJob, attempts, note_attempt
from captrack.pipeline.layout import WorkFolder

pytest.importorskip("submitit")

EVAL = StageJob("evaluate", "eval-base-0", "evaluate base (seed 0)", {"out": "/w/runs/base"}, Needs(gpus=1, threads=2))
TRAIN = StageJob("train", "train-sft", "train sft", {"out": "/w/models/sft"}, Needs(gpus=1, threads=2))
BLOCK = {"partition": "cpu", "time": 60, "mem_gb": 16, "setup": ["module load python"],
         "train": {"partition": "gpu", "gpus": 2, "time": "04:00:00", "qos": "long"},
         "evaluate": {"partition": "eval", "constraint": "a100", "sbatch": ["--exclusive"], "array_parallelism": 8,
                      "container": {"image": "/shared/captrack.sqsh", "mounts": ["/shared:/shared", "/w:/w"]}}}


def _script(options: dict[str, object], job: StageJob, count: int | None = None) -> list[str]:
    """The batch script submitit writes for `job` of a stage kind with these options (an array of `count` when given)."""
    from submitit.slurm.slurm import _make_sbatch_string

    params = sbatch_parameters(stage_options(options, job.kind), job)
    params["mem"] = f"{params.pop('mem_gb')}GB" if "mem_gb" in params else None
    if count:
        params["map_count"] = count
    return _make_sbatch_string(command="python -m submitit.core._submit /w/slurm", folder=Path("/w/slurm"),
                               **{k: v for k, v in params.items() if v is not None}).splitlines()


def test_each_stage_kind_gets_its_own_resources_over_the_blocks_defaults() -> None:
    SlurmExecutor.check_options(BLOCK, "exp.yaml")
    train, evaluate = _script(BLOCK, TRAIN), _script(BLOCK, EVAL, count=3)
    for line in ("#SBATCH --partition=gpu", "#SBATCH --gpus-per-node=2", "#SBATCH --time=240", "#SBATCH --qos=long",
                 "#SBATCH --mem=16GB", "module load python", "#SBATCH --signal=USR1@120",
                 "export SUBMITIT_PREEMPT_SIGNAL=USR1"):
        assert line in train, (line, train)
    for line in ("#SBATCH --partition=eval", "#SBATCH --gpus-per-node=1", "#SBATCH --time=60", "#SBATCH --constraint=a100",
                 "#SBATCH --exclusive", "#SBATCH --array=0-2%3", "#SBATCH --mem=16GB", "#SBATCH --signal=USR1@120"):
        assert line in evaluate, (line, evaluate)
    assert not any("--qos" in line for line in evaluate)  # the train: block's qos is the training's alone
    srun = next(line for line in evaluate if line.startswith("srun"))
    assert "--container-image=/shared/captrack.sqsh" in srun and "--container-mounts=/shared:/shared,/w:/w" in srun
    assert "--container-image" not in next(line for line in train if line.startswith("srun"))


def test_the_array_cap_and_the_signal_reach_the_script() -> None:
    script = _script({"array_parallelism": 1, "signal": "USR2@300", "time": 30 * 60}, EVAL, count=50)
    assert "#SBATCH --array=0-49%1" in script and "#SBATCH --signal=USR2@300" in script
    assert "export SUBMITIT_PREEMPT_SIGNAL=USR2" in script
    short = _script({"time": 1}, EVAL)  # the default signal: Slurm sends it 15-45 s before a 1-minute limit
    assert "#SBATCH --signal=USR1@15" in short


def test_an_apptainer_container_wraps_the_jobs_python() -> None:
    options = {"container": {"image": "/img/captrack.sif", "runtime": "apptainer", "mounts": ["/w:/w"]}}
    assert launch_python(options, "/opt/venv/bin/python", gpus=1) == \
        "apptainer exec --nv --bind /w:/w /img/captrack.sif /opt/venv/bin/python"
    assert launch_python({}, "/opt/venv/bin/python", gpus=0) == "/opt/venv/bin/python"


@pytest.mark.parametrize(("options", "message"), [
    ({"evaluate": {"partiton": "gpu"}}, "did you mean 'partition'"),
    ({"evaluate": ["gpu"]}, "executor evaluate: must be a mapping"),
    ({"train": {"time": "soon"}}, r"\(executor train:\): executor time 'soon'"),
    ({"evaluate": {"partition": "gpu\nrm -rf /"}}, "holds a line break"),
    ({"setup": ["module load x\nrm -rf /"]}, "setup line .* holds a line break"),
    ({"evaluate": {"sbatch": ["--exclusive\n--x"]}}, "sbatch line .* holds a line break"),
    ({"evaluate": {"mem_gb": float("inf")}}, "mem_gb must be a positive number"),
    ({"train": {"gpus": -1}}, "gpus must be a whole number"),
    ({"array_parallelism": 0}, "array_parallelism must be a whole number of at least 1"),
    ({"evaluate": {"array_parallelism": True}}, "array_parallelism"),
    ({"signal": "KILL@60"}, "is not USR1@SECONDS"),
    ({"signal": "B:USR1@60"}, "is not USR1@SECONDS"),
    ({"signal": "USR1@120", "time": 2}, "comes at or before the job's start"),
    ({"signal": "USR1@50", "time": 1}, "up to 30 s early"),  # Slurm sent it at the start: the job died of it
    ({"requeues": -1}, "executor requeues -1 is not a whole number"),
    ({"container": "img.sqsh"}, "container must be a mapping with an image"),
    ({"container": {"image": "a b"}}, "not one word on one line"),
    ({"container": {"image": "i", "runtime": "docker"}}, "runtime 'docker'"),
    ({"container": {"image": "i", "mounts": ["/a:/a,/b:/b"]}}, "no comma"),
    ({"container": {"image": "i", "mount": ["/a:/a"]}}, "did you mean 'mounts'"),
    ({"python": "python\nrm -rf /"}, "executor python"),
])
def test_a_value_no_job_could_be_submitted_with_is_refused_before_any_work(options: dict[str, object],
                                                                           message: str) -> None:
    with pytest.raises((InputError, UnknownNameError), match=message) as refused:
        SlurmExecutor.check_options(options, "exp.yaml")
    assert "\n" not in str(refused.value).replace("\\n", "")


def _commands(folder: Path, scripts: dict[str, str]) -> str:
    folder.mkdir(exist_ok=True)
    for name, text in scripts.items():
        (folder / name).write_text(f"#!/bin/sh\n{text}\n")
        (folder / name).chmod(stat.S_IRWXU)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


def test_jobs_ready_together_go_as_one_array_each_task_its_own_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "sbatch-calls"
    monkeypatch.setenv("PATH", _commands(tmp_path / "bin", {
        "sbatch": f'cp "$1" {tmp_path}/script-$(ls {tmp_path} | grep -c script).sh\necho x >> {calls}\n'
                  'echo "Submitted batch job 4242"',
        "srun": "exit 0", "squeue": "exit 0", "scancel": "exit 0", "sinfo": "exit 1"}))
    work = WorkFolder(tmp_path / "work")
    executor = SlurmExecutor(work, {"cpus": 1, "evaluate": {"array_parallelism": 1, "gpus": 0}}, log=lambda _: None)
    jobs = [StageJob("evaluate", f"eval-c{i}-0", f"evaluate c{i}", {"out": f"/w/{i}"}, Needs(threads=1)) for i in range(3)]
    jobs.append(StageJob("train", "train-sft", "train sft", {"out": "/w/sft"}, Needs(threads=1)))
    statuses = executor.submit_all([(job, job.write(work.job_spec(job.id))) for job in jobs])
    assert [s.job_id for s in statuses] == ["4242_0", "4242_1", "4242_2", "4242"]  # the training: its own job
    assert [s.log.rsplit("/", 1)[-1] for s in statuses[:3]] == [f"4242_{i}_0_log.out" for i in range(3)]
    assert len(calls.read_text().split()) == 2
    scripts = sorted(tmp_path.glob("script-*.sh"))
    arrays = [s.read_text() for s in scripts if "--array=" in s.read_text()]
    assert len(arrays) == 1 and "#SBATCH --array=0-2%1" in arrays[0] and "--job-name=captrack-evaluate" in arrays[0]


def test_more_gpus_per_task_than_the_partitions_nodes_have_is_refused_and_each_stage_says_its_resources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _commands(tmp_path / "bin", {"sinfo": 'echo "gpu:a100:2(S:0-1)|gpu*"'}))
    said: list[str] = []
    block = {"partition": "gpu", "time": 90, "evaluate": {"gpus": 4}, "train": {"gpus": 2, "mem_gb": 32}}
    executor = SlurmExecutor(WorkFolder(tmp_path / "work"), block, log=said.append)
    refused = executor.refusal(EVAL)
    assert refused is not None and "asks 4 GPU(s) per task but a node of gpu has at most 2 (sinfo)" in refused
    assert executor.refusal(TRAIN) is None
    assert said[-1] == "train sft: slurm partition gpu, 2 GPU(s), 2 CPU(s), 32 GB, time 90 min; no planned GPU memory; " \
                       "at most 3.00 GPU-hour(s)"
    monkeypatch.setenv("PATH", _commands(tmp_path / "bin", {"sinfo": "exit 1"}))  # sinfo cannot tell: Slurm decides
    assert SlurmExecutor(WorkFolder(tmp_path / "work"), block, log=said.append).refusal(EVAL) is None


@pytest.mark.slow  # a real (tiny) model: the dry run plans each evaluation's memory from its tokenizer
def test_a_dry_run_refuses_more_gpus_per_task_than_the_partitions_nodes_have(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from tinymodel import build_tiny_model

    from captrack.cli import main

    monkeypatch.setenv("PATH", _commands(tmp_path / "bin", {"sinfo": 'echo "gpu:a100:2(S:0-1)|gpu*"'}))
    build_tiny_model(tmp_path / "tiny", ["What is the capital of France? Answer: Paris"] * 10)
    manifest = tmp_path / "exp.yaml"
    head = (f"tasks: [captrack_probe_c1_facts]\nlimit: 2\nbase: {{name: base, model_args: {{pretrained: {tmp_path / 'tiny'}}}}}\n"
            f"variants:\n  - {{name: v, model_args: {{pretrained: {tmp_path / 'tiny'}}}}}\n")
    manifest.write_text(head + "executor: {name: slurm, partition: gpu, time: 90, evaluate: {gpus: 4}}\n")
    assert main(["run", str(manifest), "--dry-run"]) == 1
    err = capsys.readouterr().err.strip()
    print(err)
    assert "asks 4 GPU(s) per task but a node of gpu has at most 2 (sinfo)" in err and "nothing was run" in err
    assert len(err.splitlines()) == 1
    manifest.write_text(head + "executor: {name: slurm, partition: gpu, time: 90, evaluate: {gpus: 2, mem_gb: 32}}\n")
    assert main(["run", str(manifest), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    print(out)
    for title in ("evaluate base (seed 0)", "evaluate v (seed 0)"):
        assert f"{title}: slurm partition gpu, 2 GPU(s), 1 CPU(s), 32 GB, time 90 min" in out
    assert "at most 3.00 GPU-hour(s)" in out and "GB per GPU" in out


_SIGNALLED_JOB = """
import os, pickle, signal, subprocess, sys, threading
from captrack.pipeline.executors.slurm_job import StageRun, _ended

run = StageRun()
run._worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])

class Requeued(Exception):
    pass

def handler(signum, frame):  # what submitit's handler does: checkpoint, then requeue and leave
    again = run.checkpoint("/w/jobs/x.json", 1, "python")
    restored = pickle.loads(pickle.dumps(again.function))
    print("stopped" if _ended(run._worker.pid, 0) else "running", again.args, type(restored).__name__,
          restored._worker, flush=True)
    raise Requeued

signal.signal(signal.SIGUSR1, handler)
threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGUSR1)).start()
try:
    run._worker.wait()  # the job waits on its worker when the signal comes
except Requeued:
    pass
"""


def test_the_pre_limit_signal_stops_the_worker_and_hands_submitit_the_same_call() -> None:
    """StageRun.checkpoint as submitit's handler calls it, while the job waits on its worker (a real process): the
    worker is stopped (never a deadlock on the wait the signal interrupted), and what submitit pickles to requeue is
    the same call with no process in it."""
    done = subprocess.run([sys.executable, "-c", _SIGNALLED_JOB], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopped ('/w/jobs/x.json', 1, 'python') StageRun None" in done.stdout, done.stdout + done.stderr[-2000:]


def test_the_worker_ignores_the_signal_slurm_sends_the_whole_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.pipeline.executors.slurm_job import _ignore_preempt_signal

    monkeypatch.setenv("SUBMITIT_PREEMPT_SIGNAL", "USR1")
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"], preexec_fn=_ignore_preempt_signal)
    time.sleep(0.5)
    worker.send_signal(signal.SIGUSR1)
    assert worker.wait(timeout=30) == 0  # it ran to its end


def test_each_start_of_a_job_is_noted_beside_its_spec(tmp_path: Path) -> None:
    spec = EVAL.write(tmp_path / "jobs" / f"{EVAL.id}.json")
    note_attempt(spec, 0, "4242_1", 1.0)
    note_attempt(spec, 1, "4242_1", 2.0)
    assert [(a.restart, a.job_id) for a in attempts(spec)] == [(0, "4242_1"), (1, "4242_1")]


def test_status_says_how_often_a_requeued_job_started_again(tmp_path: Path) -> None:
    import io
    import json

    from rich.console import Console

    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.runner import plan
    from captrack.pipeline.status import print_status

    manifest = tmp_path / "exp.yaml"
    manifest.write_text("name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 2\n"
                        "base: {name: base, model_args: {pretrained: /nonexistent/captrack-test-model}}\n"
                        "variants:\n  - {name: v, model_args: {pretrained: /nonexistent/captrack-test-model}}\n"
                        "executor: {name: slurm, time: 30}\n")
    experiment = load_experiment(manifest)
    stage = next(s for s in plan(experiment, Console(file=io.StringIO())) if s.title == "evaluate v (seed 0)")
    assert stage.job is not None
    job = stage.job(1)
    spec = job.write(experiment.work.job_spec(job.id))
    (spec.parent / f"{job.id}.record.json").write_text(json.dumps(
        {"job": job.id, "executor": "slurm", "job_id": "4242_1", "state": "running", "restarts": 1}))
    note_attempt(spec, 0, "4242_1", 1.0)
    note_attempt(spec, 1, "4242_1", 2.0)
    shown = io.StringIO()
    print_status(experiment, Console(file=shown, width=250))
    line = next(line for line in shown.getvalue().splitlines() if "evaluate v (seed 0)" in line)
    assert "running" in line and "4242_1" in line and line.endswith("evaluate v (seed 0) (restarted 1x)"), line
