"""`model: vllm` and `python:` in `captrack run`, planned without an engine (issue 54): the evaluation of a vllm
checkpoint is a stage job run by the vLLM environment's interpreter (found where captrack.lmeval.vllm_env keeps it,
here a stand-in folder holding its ready stamp), asking tensor_parallel_size GPUs in one process; without that
environment, or with a checkpoint's `python:` that lacks what the stage imports, the run is refused before any work
with one line saying what to do. The local executor starts a job's own interpreter without this environment's
PYTHONPATH and VIRTUAL_ENV (a shell script stands in for that interpreter and writes the worker's report)."""

from __future__ import annotations

import io
import json
import os
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from captrack.errors import InputError
from captrack.lmeval import vllm_env
from captrack.pipeline.executors.local import LocalExecutor
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.interpreters import foreign_env
from captrack.pipeline.jobs import Needs, StageJob, WorkerReport
from captrack.pipeline.layout import WorkFolder
from captrack.pipeline.runner import plan

TASK = "captrack_probe_w1_choice"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    folder = tmp_path / "weights"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    return folder


def _manifest(tmp_path: Path, weights: Path, extra: str = "") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: 2\n"
                    f"base: {{name: base, model: vllm, model_args: {{pretrained: {weights}, tensor_parallel_size: 2}}"
                    f"{extra}}}\nvariants:\n  - {{name: v, model: hf, model_args: {{pretrained: {weights}}}}}\n")
    return path


def _eval_stages(manifest: Path) -> dict[str, object]:
    stages = plan(load_experiment(manifest), Console(file=io.StringIO()))
    return {s.title: s for s in stages if s.title.startswith("evaluate ")}


@pytest.fixture
def built_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A vLLM environment folder as vllm_env leaves a built one (its interpreter, its ready stamp), located there."""
    venv = tmp_path / "vllm-venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    (venv / ".ready").write_text(vllm_env._stamp(), encoding="utf-8")
    monkeypatch.setattr(vllm_env, "VLLM_VENV", venv)
    return venv / "bin" / "python"


def test_a_vllm_checkpoint_is_a_job_of_the_vllm_environment_asking_its_tensor_parallel_gpus(
        tmp_path: Path, weights: Path, built_env: Path) -> None:
    stages = _eval_stages(_manifest(tmp_path, weights))
    vllm, hf = stages["evaluate base (seed 0)"], stages["evaluate v (seed 0)"]
    job = vllm.job(1)  # type: ignore[attr-defined]
    assert job.python == str(built_env)
    assert (job.needs.gpus, job.needs.ranks, job.needs.gpu_memory) == (2, 1, 0)  # GPUs of its own, one process
    assert job.args["spec"]["model"] == "vllm" and job.args["spec"]["model_args"]["tensor_parallel_size"] == 2
    assert StageJob.from_json(job.to_json()) == job  # the spec keeps its interpreter
    assert vllm.current_inputs()["python"] == str(built_env)  # what the stage's marker records  # type: ignore[attr-defined]
    hf_job = hf.job(1)  # type: ignore[attr-defined]
    assert hf_job.python == "" and "python" not in hf.current_inputs()  # type: ignore[attr-defined]


def test_without_the_vllm_environment_the_run_is_refused_in_one_line(
        tmp_path: Path, weights: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vllm_env, "VLLM_VENV", tmp_path / "not-built")
    monkeypatch.delenv("CAPTRACK_BUILD_VLLM", raising=False)
    stage = _eval_stages(_manifest(tmp_path, weights))["evaluate base (seed 0)"]
    assert "python" in stage.current_inputs()  # type: ignore[attr-defined]  # --status reads the marker without it
    with pytest.raises(InputError) as refused:
        stage.job(1)  # type: ignore[attr-defined]  # what `captrack run` (a dry run too) builds before any work
    said = str(refused.value)
    assert "\n" not in said and "checkpoint 'base'" in said and "make vllm-venv" in said and "nothing was run" in said


def test_a_python_that_lacks_vllm_is_refused_at_plan_time(tmp_path: Path, weights: Path) -> None:
    """captrack's own interpreter has lm_eval but no vllm: named as the vllm checkpoint's python:, it is refused."""
    stage = _eval_stages(_manifest(tmp_path, weights, f", python: {sys.executable}"))["evaluate base (seed 0)"]
    with pytest.raises(InputError, match=r"checkpoint 'base'.*python: .* cannot import vllm.*nothing was run"):
        stage.job(1)  # type: ignore[attr-defined]  # what `captrack run` (a dry run too) builds before any work
    missing = tmp_path / "no-such-env" / "bin" / "python"
    with pytest.raises(InputError, match="does not start"):
        _eval_stages(_manifest(tmp_path, weights, f", python: {missing}"))["evaluate base (seed 0)"].job(1)  # type: ignore[attr-defined]


def test_an_image_s_python_is_taken_as_written_when_evaluations_run_in_a_container(tmp_path: Path, weights: Path) -> None:
    """With the Slurm executor's `container:`, a checkpoint's `python:` is the image's interpreter, which does not exist
    on the submitting host: the job is built with it (not refused); the local executor, which runs no container,
    refuses that job before any work, naming it."""
    image_python = "/opt/vllm-image/bin/python"
    manifest = _manifest(tmp_path, weights, f", python: {image_python}")
    container = "executor: {name: slurm, evaluate: {container: {image: /shared/vllm.sqsh, mounts: [/shared:/shared]}}}\n"
    manifest.write_text(manifest.read_text() + container)
    job = _eval_stages(manifest)["evaluate base (seed 0)"].job(1)  # type: ignore[attr-defined]
    assert job.python == image_python
    refused = LocalExecutor(WorkFolder(tmp_path / "work"), {}, log=lambda _: None).refusal(job)
    assert refused is not None and image_python in refused and "container" in refused
    manifest.write_text(manifest.read_text().replace(container, "executor: {name: slurm}\n"))  # no container: checked
    with pytest.raises(InputError, match="does not start"):
        _eval_stages(manifest)["evaluate base (seed 0)"].job(1)  # type: ignore[attr-defined]


def test_a_python_with_what_the_stage_imports_is_used(tmp_path: Path, weights: Path) -> None:
    """An hf checkpoint naming an interpreter that has captrack and lm_eval (this one) runs under it."""
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(f"name: t\nworkdir: work\ntasks: [{TASK}]\nlimit: 2\nbase: {{name: base, model_args: "
                        f"{{pretrained: {weights}}}, python: {sys.executable}}}\nvariants: [{{name: v, model_args: {{pretrained: {weights}}}}}]\n")
    job = _eval_stages(manifest)["evaluate base (seed 0)"].job(1)  # type: ignore[attr-defined]
    assert job.python == sys.executable


def test_a_foreign_interpreter_gets_captrack_but_not_this_environment() -> None:
    env = {"PATH": "/bin", "VIRTUAL_ENV": sys.prefix, "PYTHONPATH": "/elsewhere", "PYTHONHOME": "/x", "HF_HUB_OFFLINE": "1"}
    assert foreign_env(env, None) == env and foreign_env(env, sys.executable) == env
    assert foreign_env(env, "/opt/vllm/bin/python") == {"PATH": "/bin", "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}


_STAND_IN = """#!/bin/sh
# stands in for another environment's python: records how it was started, then writes the worker's report
printf '%s\\n' "$0" "$*" "VIRTUAL_ENV=${VIRTUAL_ENV-unset}" "PYTHONPATH=${PYTHONPATH-unset}" > "$(dirname "$0")/started"
spec="$3"
printf '{"job": "%s", "host": "h", "cuda_visible_devices": null, "ranks": 1, "started": 0, "ended": 1, "python": "%s"}' \
  "$(basename "$spec" .json)" "$0" > "${spec%.json}.report.json"
"""


def test_the_local_executor_starts_the_jobs_own_interpreter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    python = tmp_path / "other-env" / "python"
    python.parent.mkdir()
    python.write_text(_STAND_IN)
    python.chmod(0o755)
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    work = WorkFolder(tmp_path / "work")
    job = StageJob("evaluate", "eval-x-0", "evaluate x", {"n": 1}, Needs(), python=str(python))
    executor = LocalExecutor(work, {}, log=lambda line: None)
    executor.submit(job, job.write(work.job_spec(job.id)))
    deadline = time.monotonic() + 30
    done = []
    while not done and time.monotonic() < deadline:
        done = [s for s in executor.poll() if s.state.finished]
        time.sleep(0.05)
    assert [s.state.value for s in done] == ["done"], done
    started = (python.parent / "started").read_text().splitlines()
    assert started == [str(python), f"-m captrack.pipeline.stage_job {work.job_spec(job.id)}", "VIRTUAL_ENV=unset",
                       f"PYTHONPATH={ROOT}"]
    report = WorkerReport.read(work.job_spec(job.id))
    assert report is not None and report.python == str(python)
    assert json.loads(job.to_json())["python"] == str(python) and os.path.isfile(python)


def test_a_stage_run_here_starts_the_jobs_own_interpreter_and_says_when_it_failed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch of one stage runs in the runner (captrack.pipeline.batches.run_here): a job of another interpreter is
    still run by that interpreter, from its written spec, and its failure is one line naming the interpreter."""
    from captrack.errors import CaptrackError
    from captrack.pipeline.job_stages import run_here_or_under

    python = tmp_path / "other-env" / "python"
    python.parent.mkdir()
    python.write_text(_STAND_IN)
    python.chmod(0o755)
    monkeypatch.setenv("VIRTUAL_ENV", sys.prefix)
    work = WorkFolder(tmp_path / "work")
    job = StageJob("evaluate", "eval-x-0", "evaluate x", {"n": 1}, Needs(), python=str(python))
    run_here_or_under(job, work)
    started = (python.parent / "started").read_text().splitlines()
    assert started == [str(python), f"-m captrack.pipeline.stage_job {work.job_spec(job.id)}", "VIRTUAL_ENV=unset",
                       f"PYTHONPATH={ROOT}"]
    report = WorkerReport.read(work.job_spec(job.id))
    assert report is not None and report.python == str(python)
    python.write_text("#!/bin/sh\nexit 3\n")
    with pytest.raises(CaptrackError, match=r"^evaluate x failed: its worker under .*other-env/python exited with status 3"):
        run_here_or_under(job, work)
