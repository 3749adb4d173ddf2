"""The demo's real runs, converted to NeMo Evaluator's format by nel's own writer and imported, give the direct
comparison's drift.csv verdicts.

Each lm-eval ``samples_<task>.jsonl`` of ``runs/demo/runs/<model>/seed0`` (written by `make demo`) becomes one
NeMo Evaluator benchmark folder per task: ``problem_idx`` = lm-eval's ``doc_id``, ``repeat`` 0, ``reward`` =
the sample's value of the task's metric (``acc``, ``exact_match``, ``contrast_acc``), as the side-by-side of
2026-11-27 fed nel; the files are written by nemo_evaluator 0.3.0's ``build_artifact_bundle`` + ``write_all``
(tests/imports/tool_writers/nemo_bundles.py). Skipped where the demo's runs are absent (only `make demo`
makes them) or the tool environment cannot be built.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_writer

from captrack.cli import main

ROOT = Path(__file__).resolve().parents[2]
RUNS = ROOT / "runs" / "demo" / "runs"
MODELS = ("base", "sft", "dpo", "rl")
pytestmark = pytest.mark.skipif(not all((RUNS / m / "seed0").is_dir() for m in MODELS),
                                reason=f"needs the demo's runs ({RUNS.relative_to(ROOT)}/<model>/seed0), which only "
                                       "`make demo` makes")


def _records(samples: Path) -> tuple[str, list[dict]]:  # type: ignore[type-arg]
    """The task's metric and one NeMo Evaluator result record per lm-eval document."""
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines() if line.strip()]
    metric = rows[0]["metrics"][0]
    return metric, [{"problem_idx": r["doc_id"], "repeat": 0, "reward": float(r[metric]), "scorer_rewards": {},
                     "prompt": r["arguments"]["gen_args_0"]["arg_0"], "model_response": json.dumps(r["filtered_resps"]),
                     "extracted_answer": None, "expected_answer": str(r["target"]), "scoring_details": {},
                     "metadata": {}, "tokens": 0, "latency_ms": 0.0} for r in rows]


def _spec() -> tuple[dict, dict[str, str]]:  # type: ignore[type-arg]
    runs: dict[str, dict[str, list[dict]]] = {}  # type: ignore[type-arg]
    metrics = {}
    for model in MODELS:
        runs[model] = {}
        for samples in sorted((RUNS / model / "seed0").rglob("samples_*.jsonl")):
            task = samples.name.removeprefix("samples_").rsplit("_", 1)[0]
            metrics[task], runs[model][f"lm-eval://{task}"] = _records(samples)
    return {"runs": runs, "repeats": 1, "pairs": [["base", m] for m in MODELS[1:]]}, metrics


def test_the_demo_through_nemo_gives_the_direct_comparisons_verdicts(tool_python: str, tmp_path: Path) -> None:
    spec, metrics = _spec()
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    run_writer(tool_python, "nemo_bundles.py", str(tmp_path / "spec.json"), str(tmp_path / "nel"))
    for model in MODELS:
        assert main(["import", str(tmp_path / "nel" / model), "--format", "nemo", "--out", str(tmp_path / "imp" / model),
                     "--name", model]) == 0
    variants = [f"{m}={{}}/{m}:{m.upper()}" for m in MODELS[1:]]
    args = ["--bootstrap", "0"]
    assert main(["compare", "--base", str(tmp_path / "imp" / "base"), "--base-name", "base",
                 *[a for v in variants for a in ("--variant", v.format(tmp_path / "imp"))], "--out", str(tmp_path / "via"),
                 *args]) == 0
    assert main(["compare", "--base", str(RUNS / "base" / "seed0"), "--base-name", "base",
                 *[a for m in MODELS[1:] for a in ("--variant", f"{m}={RUNS / m / 'seed0'}:{m.upper()}")],
                 "--out", str(tmp_path / "direct"), *args]) == 0
    via = pd.read_csv(tmp_path / "via" / "drift.csv").set_index(["variant", "task"])
    direct = pd.read_csv(tmp_path / "direct" / "drift.csv")
    direct = direct[direct["metric"] == direct["task"].map(metrics)].set_index(["variant", "task"])
    assert len(via) == len(direct) == 3 * len(metrics) == 21
    assert (via["verdict"] == direct.loc[via.index, "verdict"]).all(), pd.concat(
        [via["verdict"], direct["verdict"]], axis=1, keys=["via_nemo", "direct"])
    assert via["change_ci_low"].to_numpy() == pytest.approx(direct.loc[via.index, "change_ci_low"].to_numpy())
    print(pd.concat([via["verdict"], direct.loc[via.index, "verdict"]], axis=1, keys=["via_nemo", "direct"]).to_string())
