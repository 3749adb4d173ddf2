"""A LoRA saved at each training step is a trajectory (issue 54: adapters are variants, in sweeps too): a
`checkpoints:` variant with `model_args.pretrained` evaluates each step as that base with the step's adapter (hf:
peft=, vllm: LoRA, captrack-ds: merged), every folder checked as an `adapter:` variant's is, when the experiment is
read; a served checkpoint with an adapter is refused at plan time with what to do instead."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment


def _adapter(folder: Path, base: str, step: int | None = None) -> Path:
    """An adapter folder as a PEFT trainer's checkpoint-N holds it (the weights' bytes are not read at plan time)."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base, "peft_type": "LORA", "r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(f"weights {folder.name}".encode())
    if step is not None:
        (folder / "trainer_state.json").write_text(json.dumps({"global_step": step, "epoch": step / 4}))
    return folder


def _manifest(tmp_path: Path, variant: str, extra: str = "") -> Path:
    (tmp_path / "base").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text("name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\n"
                    "base: {name: base, model_args: {pretrained: base}}\n"
                    f"variants:\n  - {{name: lora, algorithm: SFT, {variant}}}\n{extra}")
    return path


def _steps(tmp_path: Path) -> None:
    for step in (2, 4):
        _adapter(tmp_path / "out" / f"checkpoint-{step}", str(tmp_path / "base"), step)


def test_each_step_is_the_base_with_that_steps_adapter(tmp_path: Path) -> None:
    from captrack.pipeline.job_stages import eval_stage

    _steps(tmp_path)
    path = _manifest(tmp_path, 'model_args: {pretrained: base}, checkpoints: "out/checkpoint-*"',
                     "executor: {name: local, gpus: 0}\n")  # no GPU to ask torch about
    experiment = load_experiment(path)
    variant = experiment.variants[0]
    assert variant.step_adapters and [s for s, _ in variant.steps] == [2, 4]
    assert variant.model_args == {"pretrained": str(tmp_path / "base")}  # absolute: the same from any folder
    jobs = {}
    for step in (2, 4):
        stage = eval_stage(experiment, variant, 0, {}, step, tmp_path / f"out{step}")
        assert stage.job is not None
        jobs[step] = (stage.current_inputs(), stage.job(1).args)
    for step, (_, args) in jobs.items():  # the job hands the evaluation the base and this step's adapter
        assert args["spec"]["model_args"]["pretrained"] == str(tmp_path / "base")
        assert args["spec"]["model_args"]["adapter"] == str(tmp_path / "out" / f"checkpoint-{step}")
    assert jobs[2][0]["weights"] != jobs[4][0]["weights"] and jobs[2][1]["cache"] != jobs[4][1]["cache"]


def test_full_checkpoints_are_evaluated_as_before(tmp_path: Path) -> None:
    saved = tmp_path / "full" / "checkpoint-3"
    saved.mkdir(parents=True)
    (saved / "model.safetensors").write_bytes(b"")
    variant = load_experiment(_manifest(tmp_path, 'checkpoints: "full/checkpoint-*"')).variants[0]
    assert not variant.step_adapters and variant.steps == ((3, saved),) and variant.model_args == {}


@pytest.mark.parametrize(("variant", "extra", "message"), [
    ('checkpoints: "out/checkpoint-*"', "",
     r"checkpoint .*checkpoint-2 is a PEFT adapter \(adapter_config.json\), not model weights; give model_args.pretrained"),
    ('model_args: {pretrained: base}, checkpoints: "full/checkpoint-*"', "",
     r"checkpoint .*full/checkpoint-3 holds no adapter_config.json, so it is not a PEFT adapter, yet model_args.pretrained"),
    ('model_args: {pretrained: base, adapter: out/checkpoint-2}, checkpoints: "out/checkpoint-*"', "",
     r"checkpoints: give each step's adapter as a checkpoints folder, not also model_args.adapter"),
    ('model_args: {pretrained: base}, checkpoints: "mixed/checkpoint-*"', "",
     r"checkpoint 'lora': checkpoints \(step 5\): .*was made on '/elsewhere/llama-8b', not on pretrained"),
    ('model: captrack-replay, model_args: {pretrained: base}, checkpoints: "out/checkpoint-*"', "",
     r"checkpoints \(step 2\): model captrack-replay cannot take an adapter"),
])
def test_a_bad_adapter_sweep_is_one_line_at_plan_time(tmp_path: Path, variant: str, extra: str, message: str) -> None:
    _steps(tmp_path)
    full = tmp_path / "full" / "checkpoint-3"
    full.mkdir(parents=True)
    (full / "model.safetensors").write_bytes(b"")
    _adapter(tmp_path / "mixed" / "checkpoint-1", str(tmp_path / "base"))
    _adapter(tmp_path / "mixed" / "checkpoint-5", "/elsewhere/llama-8b")  # another base's adapter among the steps
    with pytest.raises(InputError, match=message) as raised:
        load_experiment(_manifest(tmp_path, variant, extra))
    assert "\n" not in str(raised.value) and "'lora'" in str(raised.value)  # one line, naming the variant
    assert not (tmp_path / "work").exists()  # nothing was run


def test_a_served_adapter_is_taken(tmp_path: Path) -> None:
    """serve: vllm with an adapter (a variant's or a sweep's steps) is read like an in-process one: the server loads it
    as a LoRA module (captrack.lmeval.served; tests/backends/test_adapter_backends.py runs it)."""
    _adapter(tmp_path / "lora", str(tmp_path / "base"))
    variant = load_experiment(_manifest(tmp_path, "model: vllm, serve: vllm, model_args: {pretrained: base, adapter: lora}"))\
        .variants[0]
    assert variant.serve == "vllm" and variant.model_args["adapter"] == str(tmp_path / "lora")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs peft (the dev extra has it)")
@pytest.mark.skipif(not os.environ.get("CAPTRACK_ADAPTER_SWEEP_RUN"), reason=(
    "a real captrack run of three tiny evaluations (hf with peft) and a board: 189 s wall, 73 s CPU on the loaded "
    "2-core machine, over the slow set's budget; set CAPTRACK_ADAPTER_SWEEP_RUN=1 to run it"))
def test_a_lora_sweep_runs_each_steps_adapter(tmp_path: Path) -> None:
    """`captrack run` on a LoRA saved at two steps: each step's run is its own adapter over the base (lm-eval records
    peft=<that step's folder>), the adapters are not ignored (each step's loglikelihoods differ from the base's and from
    each other), and the board shows the trajectory."""
    import io

    from rich.console import Console
    from tinyadapter import build_adapter, build_adapter_base

    from captrack.pipeline.runner import run_experiment

    texts = ["Question: What is the capital of France?\nAnswer: Paris", "Question: the opposite of hot is\nAnswer: cold"] * 20
    base = build_adapter_base(tmp_path / "base", texts, seed=0)
    for step, seed in ((2, 1), (4, 2)):
        build_adapter(base, tmp_path / "out" / f"checkpoint-{step}", seed=seed)
    path = _manifest(tmp_path, 'model_args: {pretrained: base}, checkpoints: "out/checkpoint-*"',
                     "limit: 12\nbatch_size: 8\nexecutor: {name: local, workers: 1}\n")
    run_experiment(load_experiment(path), console=Console(file=io.StringIO()))
    work = load_experiment(path).work
    found = {}
    for name, step in (("base", None), ("lora", 2), ("lora", 4)):
        (results,) = work.run(name, 0, step).rglob("results_*.json")
        found[step] = (json.loads(results.read_text())["config"]["model_args"], _loglikelihoods(results.parent))
    for step in (2, 4):
        assert found[step][0]["peft"] == str(tmp_path / "out" / f"checkpoint-{step}")
        assert found[step][0]["pretrained"] == str(base)
    assert "peft" not in found[None][0]
    assert found[2][1] != found[None][1] != found[4][1] != found[2][1]
    assert (tmp_path / "board" / "curves.csv").is_file()


def _loglikelihoods(run: Path) -> dict[int, list[float]]:
    (samples,) = run.glob("samples_captrack_probe_c1_facts_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    return {int(r["doc_id"]): [round(float(c[0]), 4) for c in r["filtered_resps"]] for r in rows}
