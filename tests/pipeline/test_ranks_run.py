"""A two-rank captrack-ds evaluation started by `captrack run` itself (torchrun over its ranks; on CPU with
DS_ACCELERATOR=cpu) gives the samples of the one-rank run, and gets two GPUs of an injected inventory."""

from __future__ import annotations

import importlib.util
import json
import math
import shutil
import sys
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.pipeline.jobs import WorkerReport

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backends"))
from tinyfamilies import build_family

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("deepspeed") is None, reason="deepspeed is not importable"),
    pytest.mark.skipif(not (shutil.which("c++") or shutil.which("g++")),
                       reason="DeepSpeed JIT-compiles its CPU all-reduce op and needs a C++ compiler"),
]
TASKS = "captrack_probe_c1_facts, captrack_probe_c2_logic"


def _samples(folder: Path) -> dict[tuple[str, int], dict]:
    found = {}
    for path in folder.rglob("samples_*.jsonl"):
        for line in path.read_text().splitlines():
            row = json.loads(line)
            found[(row["doc"].get("id", ""), row["doc_id"])] = row
    return found


def test_two_ranks_started_by_captrack_run_give_the_one_rank_samples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = build_family(tmp_path / "models", "llama")
    monkeypatch.setenv("DS_ACCELERATOR", "cpu")
    monkeypatch.setenv("CAPTRACK_GPUS", "2")  # two GPUs, no memory known: each job has its GPUs to itself
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    args = f"{{pretrained: {model}, mode: tp, dtype: float32}}"
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASKS}]\nlimit: 4\nbatch_size: 2\n"
                        f"base: {{name: one, model: captrack-ds, model_args: {args}}}\n"
                        f"variants:\n  - {{name: two, model: captrack-ds, ranks: 2, model_args: {args}, algorithm: TP}}\n")
    assert main(["run", str(manifest)]) == 0
    work = tmp_path / "work"
    reports = {r.ranks: r for r in (WorkerReport.read(p.with_name(p.name.replace(".report.json", ".json")))
                                    for p in (work / "jobs").glob("*.report.json")) if r is not None}
    assert reports[2].cuda_visible_devices == "0,1" and reports[1].cuda_visible_devices in ("0", "1")
    placement = json.loads((work / "markers" / "eval-two-0.json").read_text())["placement"]
    assert placement["gpus"] == "0,1"
    one, two = _samples(work / "runs" / "one" / "seed0"), _samples(work / "runs" / "two" / "seed0")
    assert one.keys() == two.keys() and len(one) == 8
    for key, row in one.items():
        other = two[key]
        assert row["filtered_resps"] == other["filtered_resps"] or all(  # loglikelihoods: float32 all-reduce order
            math.isclose(float(a[0]), float(b[0]), abs_tol=1e-4)
            for a, b in zip(row["filtered_resps"], other["filtered_resps"], strict=True)), key
        metrics = {k: v for k, v in row.items() if k in ("acc", "exact_match")}
        assert metrics == {k: v for k, v in other.items() if k in metrics}, key
