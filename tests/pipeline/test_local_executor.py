"""The local executor on a GPU node, checked on CPU with an injected GPU inventory (CAPTRACK_GPUS), and stage jobs
that run from their spec alone."""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from tinymodel import build_tiny_model

from captrack.errors import InputError
from captrack.pipeline.executors.local import Gpu, claim, gpu_inventory, place, release
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.jobs import Needs, StageJob, WorkerReport
from captrack.pipeline.runner import plan, run_experiment
from captrack.results.runfiles import results_files

TASK = "captrack_probe_c1_facts"


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "a", texts, seed=0), build_tiny_model(root / "b", texts, seed=1)


def _manifest(tmp_path: Path, models: tuple[Path, Path], variants: int = 3) -> Path:
    lines = [f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: 2\nbatch_size: 4",
             f"base: {{name: base, model_args: {{pretrained: {models[0]}}}}}", "variants:"]
    lines += [f"  - {{name: v{i}, model_args: {{pretrained: {models[(i + 1) % 2]}}}, algorithm: SFT}}" for i in range(variants)]
    path = tmp_path / "exp.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _job(name: str, gpus: int = 1, memory: int = 0) -> StageJob:
    return StageJob("evaluate", name, name, {"n": name}, Needs(gpus=gpus, ranks=gpus, gpu_memory=memory))


def test_the_inventory_is_injectable_and_a_bad_one_is_refused() -> None:
    assert [(g.id, g.memory) for g in gpu_inventory(env={"CAPTRACK_GPUS": "2x80GB"})] == [("0", 80 * 10**9), ("1", 80 * 10**9)]
    assert [g.id for g in gpu_inventory(env={"CAPTRACK_GPUS": "4:24GB,5:24GB"})] == ["4", "5"]
    assert gpu_inventory(env={"CAPTRACK_GPUS": "0"}) == []
    assert [g.id for g in gpu_inventory({"gpus": "3"}, env={"CAPTRACK_GPUS": "2x80GB"})] == ["0", "1", "2"]
    with pytest.raises(InputError, match="CAPTRACK_GPUS: GPU memory 'lots'"):
        gpu_inventory(env={"CAPTRACK_GPUS": "2xlots"})


def test_two_jobs_share_a_gpu_only_when_their_planned_memory_fits_it() -> None:
    gpus = [Gpu("0", 80 * 10**9), Gpu("1", 80 * 10**9)]
    small = [_job(f"s{i}", memory=30 * 10**9) for i in range(5)]
    for job in small[:4]:  # two GPUs, 30 GB each: the emptiest GPU first, then two on each
        found = place(gpus, job, 1)
        assert found is not None
        claim(found, job)
    assert sorted(len(g.holders) for g in gpus) == [2, 2] and place(gpus, small[4], 1) is None  # 90 GB would not fit
    release(gpus, small[0])
    assert place(gpus, small[4], 1) is not None
    unplanned = _job("u")  # no plan: a GPU of its own, never shared
    assert place(gpus, unplanned, 1) is None
    for job in small[1:4]:
        release(gpus, job)
    release(gpus, small[0])
    found = place(gpus, unplanned, 1)
    assert found is not None
    claim(found, unplanned)
    assert place(gpus, _job("s9", memory=10**9), 1) == [g for g in gpus if g not in found]
    two = _job("tp2", gpus=2, memory=10**9)
    assert place(gpus, two, 2) is None  # one GPU is the unplanned job's
    release(gpus, unplanned)
    assert [g.id for g in place(gpus, two, 2) or []] == ["0", "1"]


def _reports(work: Path) -> list[WorkerReport]:
    found = [WorkerReport.read(p.with_name(p.name.replace(".report.json", ".json"))) for p in (work / "jobs").glob("*.report.json")]
    return [r for r in found if r is not None]


def test_four_one_gpu_evaluations_on_two_gpus_never_share_one(tmp_path: Path, models: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Each evaluation plans more than half a GPU: two run at once, one per GPU, and each worker reports its GPU."""
    stages = plan(load_experiment(_manifest(tmp_path, models)), Console(file=io.StringIO()))
    planned = max(s.job(1).needs.gpu_memory for s in stages if s.job is not None)  # for the task's own longest request
    assert planned > 0
    monkeypatch.setenv("CAPTRACK_GPUS", f"2x{planned * 3 // 2 // 10**6}MB")
    timings = run_experiment(load_experiment(_manifest(tmp_path, models)), console=Console(file=io.StringIO()))
    assert {f"evaluate {n} (seed 0)" for n in ("base", "v0", "v1", "v2")} <= set(timings)
    reports = _reports(tmp_path / "work")
    assert len(reports) == 4
    for report in reports:  # what each worker was given, as it saw it
        assert report.cuda_visible_devices in ("0", "1") and report.ranks == 1
    for name in ("base", "v0", "v1", "v2"):
        placement = json.loads((tmp_path / "work" / "markers" / f"eval-{name}-0.json").read_text())["placement"]
        assert placement["executor"] == "local" and placement["gpus"] in ("0", "1") and placement["host"]
    for gpu in ("0", "1"):
        spans = sorted((r.started, r.ended) for r in reports if r.cuda_visible_devices == gpu)
        assert spans, f"GPU {gpu} ran nothing"
        assert all(end <= start for (_, end), (start, _) in itertools.pairwise(spans)), f"GPU {gpu} ran two at once: {spans}"
    from captrack.pipeline.status import stage_states

    states = {s.title: s for s in stage_states(load_experiment(tmp_path / "exp.yaml"), Console(file=io.StringIO()))}
    evaluation = states["evaluate v1 (seed 0)"]  # `captrack run --status`: state, executor, job id, host, GPUs
    assert (evaluation.state, evaluation.executor) == ("done", "local") and evaluation.job_id.isdigit()
    assert evaluation.gpus in ("0", "1") and evaluation.host and evaluation.gpu_hours is not None
    assert states["ingest all runs"].state == "done"


@pytest.mark.slow
def test_the_same_experiment_gives_byte_identical_csvs_here_and_as_packed_jobs(
        tmp_path: Path, models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process one stage after another (one worker), and as jobs packed onto two injected GPUs: the same board."""
    boards = []
    for name, env in (("here", {"CAPTRACK_WORKERS": "1", "CAPTRACK_GPUS": "0"}), ("jobs", {"CAPTRACK_GPUS": "2"})):
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        folder = tmp_path / name
        folder.mkdir()
        run_experiment(load_experiment(_manifest(folder, models, variants=1)), console=Console(file=io.StringIO()))
        boards.append(folder / "board")
        monkeypatch.delenv("CAPTRACK_WORKERS", raising=False)
    assert not list((tmp_path / "here" / "work" / "jobs").glob("*.report.json"))  # really run here
    assert len(list((tmp_path / "jobs" / "work" / "jobs").glob("*.report.json"))) == 2  # really run as jobs
    csvs = sorted(p.relative_to(boards[0]) for p in boards[0].rglob("*.csv"))
    assert csvs and csvs == sorted(p.relative_to(boards[1]) for p in boards[1].rglob("*.csv"))
    for csv in csvs:
        assert (boards[0] / csv).read_bytes() == (boards[1] / csv).read_bytes(), csv


def test_a_worker_runs_its_spec_with_the_experiment_file_gone(tmp_path: Path, models: tuple[Path, Path]) -> None:
    """The spec names everything the evaluation reads: no experiment file, no planning in the worker."""
    manifest = _manifest(tmp_path, models, variants=1)
    stages = plan(load_experiment(manifest), Console(file=io.StringIO()))
    stage = next(s for s in stages if s.title == "evaluate v0 (seed 0)")
    assert stage.job is not None
    job = stage.job(1)
    spec = job.write(tmp_path / "work" / "jobs" / f"{job.id}.json")
    manifest.unlink()
    assert str(manifest) not in spec.read_text() and stage.job(1).id == job.id  # stable: the same inputs, the same id
    done = subprocess.run([sys.executable, "-m", "captrack.pipeline.stage_job", str(spec)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "CAPTRACK_THREADS": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert any(results_files(tmp_path / "work" / "runs" / "v0" / "seed0"))
    report = WorkerReport.read(spec)
    assert report is not None and report.job == job.id and report.ranks == 1
    edited = spec.read_text().replace('"limit": 2', '"limit": 3')
    spec.write_text(edited)
    with pytest.raises(InputError, match="edited by hand"):
        StageJob.read(spec)


def test_ranks_off_captrack_ds_and_an_unknown_executor_or_option_are_refused_before_work(
        tmp_path: Path, models: tuple[Path, Path]) -> None:
    from captrack.errors import UnknownNameError

    manifest = _manifest(tmp_path, models, variants=1)
    text = manifest.read_text()
    manifest.write_text(text.replace("algorithm: SFT}", "algorithm: SFT, ranks: 2}"))
    with pytest.raises(InputError, match="ranks: 2 runs an evaluation over several processes, which only model: captrack-ds"):
        run_experiment(load_experiment(manifest), console=Console(file=io.StringIO()))
    manifest.write_text(text + "executor: {name: locl}\n")
    with pytest.raises(UnknownNameError, match="did you mean 'local'"):
        run_experiment(load_experiment(manifest), console=Console(file=io.StringIO()))
    manifest.write_text(text + "executor: {name: local, worker: 2}\n")
    with pytest.raises(UnknownNameError, match=r"'worker'.*did you mean 'workers'"):
        run_experiment(load_experiment(manifest), console=Console(file=io.StringIO()))
    manifest.write_text(text)
    with pytest.raises(UnknownNameError, match="did you mean 'local'"):
        run_experiment(load_experiment(manifest), console=Console(file=io.StringIO()), executor="lokal")
    assert not (tmp_path / "work").exists()
