"""The dtype a run computes in (issue 52): `dtype: auto` (the demo's) is bfloat16 where the hardware has bfloat16
arithmetic and float32 on a CPU without it, said once at the start; `--dtype` overrides; the note about a missing
bfloat16 unit appears only for a stage that computes in bfloat16. The CPU is injected with CAPTRACK_CPU_FLAGS."""

from __future__ import annotations

from pathlib import Path

import pytest
from tinymodel import build_tiny_model

from captrack.cli import main
from captrack.errors import InputError
from captrack.pipeline.cpu import bf16_features
from captrack.pipeline.dtype_choice import (
    apply_dtype,
    bf16_hardware,
    choose_dtype,
    made_with,
    uses_bf16,
)
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.quick_run import demo_experiment

AVX2 = "fpu sse4_2 avx avx2 fma"
SAPPHIRE = "avx2 avx512f avx512_bf16 amx_tile amx_bf16"
CHOSEN = "dtype float32 for every evaluation and training"


def test_auto_is_bfloat16_only_where_the_hardware_computes_it() -> None:
    assert bf16_hardware(env={"CAPTRACK_CPU_FLAGS": AVX2}, cuda=False) == ""
    assert "amx_bf16" in bf16_hardware(env={"CAPTRACK_CPU_FLAGS": SAPPHIRE}, cuda=False)
    assert bf16_hardware(env={"CAPTRACK_CPU_FLAGS": AVX2}, cuda=True) == "a CUDA GPU"
    assert choose_dtype("auto", "").dtype == "float32"
    assert choose_dtype("auto", "the CPU's avx512_bf16").dtype == "bfloat16"
    assert choose_dtype("bfloat16", "").dtype == "bfloat16"  # asked for: kept, however slow
    with pytest.raises(InputError, match="give auto or one of"):
        choose_dtype("fp8", "")


def test_the_demo_becomes_float32_throughout_on_a_cpu_without_bf16() -> None:
    demo = load_experiment(demo_experiment())
    assert demo.dtype == "auto" and uses_bf16(demo)
    chosen = apply_dtype(demo, choose_dtype("auto", ""))
    assert {c.model_args["dtype"] for c in chosen.checkpoints} == {"float32"}
    assert [c.train["bf16"] for c in chosen.variants if c.train] == [False, False, False] and not uses_bf16(chosen)
    same = apply_dtype(demo, choose_dtype("auto", "the CPU's amx_bf16"))
    assert same.checkpoints == demo.checkpoints  # where bfloat16 is fast the demo is what it always was
    assert chosen.description.endswith(made_with(choose_dtype("auto", ""))) and "made in float32" in chosen.description
    assert "made in bfloat16" in same.description  # the board says which dtype and CPU class made its numbers


def test_the_demo_says_its_float32_choice_once_and_dtype_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capfd: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CAPTRACK_CPU_FLAGS", AVX2)
    monkeypatch.setattr("captrack.pipeline.dtype_choice._cuda_available", lambda: False)
    assert main(["run", "--quick", "--dry-run"]) == 0
    text = "".join(capfd.readouterr())
    assert text.count(CHOSEN) == 1 and "no bfloat16 instructions" in text, text[:2000]
    assert main(["run", "--quick", "--dry-run", "--dtype", "bfloat16"]) == 0
    text = "".join(capfd.readouterr())
    assert CHOSEN not in text and "dtype bfloat16 for every evaluation and training (as asked" in text


def test_a_float32_run_on_a_cpu_without_bf16_prints_no_dtype_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capfd: pytest.CaptureFixture[str]) -> None:
    texts = ["What is the capital of France? Answer: Paris"] * 20
    base, variant = (build_tiny_model(tmp_path / name, texts, seed=seed) for seed, name in enumerate("ab"))
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(
        "name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 4\nbatch_size: 4\n"
        f"dtype: float32\nbase: {{name: base, model_args: {{pretrained: {base}}}}}\n"
        f"variants:\n  - {{name: v, model_args: {{pretrained: {variant}}}, algorithm: SFT}}\n")
    monkeypatch.setenv("CAPTRACK_CPU_FLAGS", AVX2)
    assert main(["run", str(manifest)]) == 0
    text = "".join(capfd.readouterr())
    assert "CPU bfloat16 features: amx_bf16 no, avx512_bf16 no" in text  # the stages did say what the CPU has
    assert "emulated" not in text and "--dtype auto" not in text
    assert "emulated" in bf16_features(f"flags : {AVX2}\n", {}, uses_bf16=True)  # what a bfloat16 stage is told


def test_a_board_made_under_auto_says_which_dtype_and_cpu_class_made_it() -> None:
    with_bf16 = made_with(choose_dtype("auto", "the CPU's avx512_bf16"))
    assert with_bf16.startswith("These numbers were made in bfloat16 (dtype: auto; the CPU's avx512_bf16 has")
    assert "On a CPU without bfloat16 instructions auto picks float32" in with_bf16
    without = made_with(choose_dtype("auto", ""))
    assert without.startswith("These numbers were made in float32") and "with bfloat16 instructions auto picks bfloat16" in without
    assert made_with(choose_dtype("float32")) == "" and made_with(choose_dtype("bfloat16")) == ""  # asked by name
