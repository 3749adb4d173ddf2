"""A variant given as a PEFT LoRA adapter over its base (issue 54: adapters are variants) evaluates alike with `hf`
(lm-eval's peft=), `captrack-ds` (merged into the base before placement) and `vllm` (LoRA enabled): the same
multiple-choice decisions on ≥ 99% of a probe's items in float32, and the adapter is never silently ignored (each
backend's adapter run differs from the base's, and is close to hf-with-peft).

The adapter is made here with peft on a tiny random Llama (tests/tinyadapter.py; its LoRA weights random, not zero),
once per session. Every backend runs through captrack.lmeval.evaluate.evaluate_checkpoint, as `captrack run`'s
evaluation stage does (tests/backends/adapter_driver.py). hf and captrack-ds: one process, about a minute on 2 loaded
cores; vLLM: its engine's start, two minutes or more; hence `slow`. Without the vLLM environment its test skips with
the reason (`make vllm-venv` builds it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from statistics import median

import pytest
from adapter_driver import ITEMS, TASK
from tinyadapter import build_adapter, build_adapter_base
from vllmenv import built_vllm_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(1800),
    pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs peft (the dev extra has it)"),
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
AGREEMENT = 0.99
TEXTS = ["Question: What is the capital of France?\nAnswer: Paris", "Question: the opposite of hot is\nAnswer: cold"] * 20
DEEPSPEED = ("captrack-ds needs deepspeed (the dev extra has it)" if importlib.util.find_spec("deepspeed") is None else
             "DeepSpeed JIT-compiles its CPU all-reduce op and needs a C++ compiler (apt-get install g++)"
             if not (shutil.which("c++") or shutil.which("g++")) else None)
"""Why captrack-ds cannot run here (None: it can)."""
_LAUNCH_KEYS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "LOCAL_SIZE", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture(scope="session")
def adapter_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(base folder, LoRA adapter folder), made once per session."""
    root = tmp_path_factory.mktemp("adapter")
    base = build_adapter_base(root / "base", TEXTS, seed=0)
    return base, build_adapter(base, root / "lora", seed=1)


def _env(cache: Path, drop: tuple[str, ...] = ()) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*_LAUNCH_KEYS, *drop)}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", DS_ACCELERATOR="cpu", CAPTRACK_CACHE=str(cache))
    return env


def _drive(python: str, out: Path, runs: list[dict], env: dict[str, str]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs.json").write_text(json.dumps(runs))
    log = out / "log.txt"
    with log.open("w") as handle:
        done = subprocess.run([python, str(HERE / "adapter_driver.py"), str(out), str(out / "runs.json")], env=env,
                              cwd=out, stdout=handle, stderr=subprocess.STDOUT, timeout=1700, check=False)
    assert done.returncode == 0, log.read_text()[-4000:]
    return out


def _loglikelihoods(run: Path) -> dict[int, list[float]]:
    """Each item's choices' loglikelihoods from the one per-sample file of TASK under `run`."""
    (samples,) = run.rglob(f"samples_{TASK}_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    return {int(r["doc_id"]): [float(choice[0]) for choice in r["filtered_resps"]] for r in rows}


def _decisions(lls: dict[int, list[float]]) -> dict[int, int]:
    return {doc: max(range(len(values)), key=values.__getitem__) for doc, values in lls.items()}


def _agreement(a: dict[int, list[float]], b: dict[int, list[float]]) -> float:
    assert sorted(a) == sorted(b) and len(a) == ITEMS, (len(a), len(b))
    first, second = _decisions(a), _decisions(b)
    return sum(first[d] == second[d] for d in first) / len(first)


def _median_gap(a: dict[int, list[float]], b: dict[int, list[float]]) -> float:
    return median(abs(x - y) for d in a for x, y in zip(a[d], b[d], strict=True))


@pytest.fixture(scope="session")
def main_runs(adapter_pair: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hf on the base, hf with peft and captrack-ds merged, in one process of captrack's environment."""
    base, lora = adapter_pair
    args = {"pretrained": str(base), "dtype": "float32"}
    runs = [{"name": "hf-base", "model": "hf", "model_args": args},
            {"name": "hf-peft", "model": "hf", "model_args": {**args, "adapter": str(lora)}}]
    if DEEPSPEED is None:
        runs.append({"name": "ds-merged", "model": "captrack-ds", "model_args": {**args, "adapter": str(lora), "mode": "tp"}})
    out = tmp_path_factory.mktemp("adapter-runs")
    env = _env(out / "cache")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)
    return _drive(sys.executable, out, runs, env)


@pytest.mark.skipif(DEEPSPEED is not None, reason=str(DEEPSPEED))
def test_hf_with_peft_and_captrack_ds_merged_agree_and_the_adapter_counts(main_runs: Path) -> None:
    base, peft, merged = (_loglikelihoods(main_runs / name) for name in ("hf-base", "hf-peft", "ds-merged"))
    agreement = _agreement(peft, merged)
    gaps = _median_gap(peft, merged), _median_gap(peft, base), _median_gap(merged, base)
    print(f"hf-peft vs ds-merged: decisions identical {agreement:.1%}; median |Δll| peft-merged {gaps[0]:.2g}, "
          f"peft-base {gaps[1]:.2g}, merged-base {gaps[2]:.2g}; peft vs base decisions {_agreement(peft, base):.1%}")
    assert agreement >= AGREEMENT
    assert gaps[0] < 1e-3  # merging changes only the order of float32 additions
    assert gaps[1] > 1e-2 and gaps[2] > 1e-2  # the adapter is applied by both, not silently dropped
    assert _agreement(peft, base) < 1.0  # and it changes decisions, so agreement above is not the base agreeing with itself
    merged_dirs = list((main_runs / "cache" / "merged").glob("*/config.json"))
    assert len(merged_dirs) == 1  # merged once, into captrack's cache


@pytest.fixture(scope="module")
def vllm_interpreter() -> Path:
    return built_vllm_python()


def test_vllm_with_lora_agrees_with_hf_with_peft(vllm_interpreter: Path, adapter_pair: tuple[Path, Path],
                                                  main_runs: Path, tmp_path: Path) -> None:
    base, lora = adapter_pair
    args = {"pretrained": str(base), "dtype": "float32", "max_model_len": 512, "enforce_eager": True, "adapter": str(lora)}
    out = _drive(str(vllm_interpreter), tmp_path / "vllm", [{"name": "vllm-lora", "model": "vllm", "model_args": args}],
                 _env(tmp_path / "cache", drop=("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")))
    lora_lls = _loglikelihoods(out / "vllm-lora")
    peft, base_lls = _loglikelihoods(main_runs / "hf-peft"), _loglikelihoods(main_runs / "hf-base")
    agreement = _agreement(peft, lora_lls)
    gaps = _median_gap(peft, lora_lls), _median_gap(lora_lls, base_lls)
    print(f"hf-peft vs vllm-lora: decisions identical {agreement:.1%}; median |Δll| {gaps[0]:.2g}; vllm-lora vs base "
          f"{gaps[1]:.2g}")
    assert agreement >= AGREEMENT
    assert gaps[0] < 1e-2 and gaps[1] > 1e-2  # vLLM applied the adapter (its loglikelihoods are the adapter's)


def test_a_served_vllm_with_lora_agrees_with_hf_with_peft(vllm_interpreter: Path, adapter_pair: tuple[Path, Path],
                                                          main_runs: Path, tmp_path: Path) -> None:
    """serve: vllm with an adapter: the job's server loads it as a LoRA module and lm-eval's local-completions names it;
    the decisions are hf-with-peft's, not the base's (an adapter the server ignored would give the base's numbers)."""
    base, lora = adapter_pair
    args = {"pretrained": str(base), "dtype": "float32", "max_model_len": 512, "enforce_eager": True, "adapter": str(lora)}
    out = _drive(str(vllm_interpreter), tmp_path / "served",
                 [{"name": "served-lora", "model": "vllm", "model_args": args, "serve": True}],
                 _env(tmp_path / "cache", drop=("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")))
    served = _loglikelihoods(out / "served-lora")
    peft, base_lls = _loglikelihoods(main_runs / "hf-peft"), _loglikelihoods(main_runs / "hf-base")
    agreement = _agreement(peft, served)
    gaps = _median_gap(peft, served), _median_gap(served, base_lls)
    server_log = next((out / "served-lora").parent.glob("*vllm-server*.log"), None)
    print(f"hf-peft vs served vllm-lora: decisions identical {agreement:.1%}; median |Δll| {gaps[0]:.2g}; served "
          f"vllm-lora vs base {gaps[1]:.2g}; server log {server_log}")
    assert agreement >= AGREEMENT
    assert gaps[0] < 1e-2 and gaps[1] > 1e-2  # the server applied the adapter
    assert server_log is not None and "captrack-adapter" in server_log.read_text(errors="replace")
