"""A stage's time counts from when its worker started running it (issue 52): two evaluations queued behind one
worker, and the second's recorded run time excludes the time it waited, which is recorded apart."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from tinymodel import build_tiny_model

from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.jobs import WorkerReport
from captrack.pipeline.runner import run_experiment


def test_a_stage_queued_behind_another_records_its_run_time_without_its_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["What is the capital of France? Answer: Paris"] * 20
    base, variant = (build_tiny_model(tmp_path / name, texts, seed=seed) for seed, name in enumerate("ab"))
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(
        "name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c1_facts]\nlimit: 4\nbatch_size: 4\n"
        "executor: {name: local, workers: 1}\n"  # one worker: the second evaluation waits for the first
        f"base: {{name: base, model_args: {{pretrained: {base}}}}}\n"
        f"variants:\n  - {{name: v, model_args: {{pretrained: {variant}}}, algorithm: SFT}}\n")
    monkeypatch.setenv("CAPTRACK_WORKERS", "2")  # two stages side by side are asked for, as jobs
    monkeypatch.setenv("CAPTRACK_GPUS", "0")
    out = io.StringIO()
    run_experiment(load_experiment(manifest), console=Console(file=out, width=400))
    done = {m["title"]: (float(m["ran"]), float(m["queued"] or 0)) for m in re.finditer(
        r"done (?P<title>evaluate \w+ \(seed 0\)) in (?P<ran>[\d.]+) s(?: \(queued (?P<queued>[\d.]+) s before it\))?",
        out.getvalue())}
    assert len(done) == 2, out.getvalue()
    work = tmp_path / "work"
    ran = {}
    for spec in (work / "jobs").glob("eval-*.json"):
        if spec.name.endswith((".record.json", ".report.json")):
            continue
        report = WorkerReport.read(spec)
        assert report is not None
        ran[report.job] = report.ended - report.started
    assert len(ran) == 2
    (_, first_times), (_, second_times) = sorted(done.items(), key=lambda kv: kv[1][1])
    assert second_times[1] >= 0.8 * first_times[0], done  # it waited about as long as the first one ran
    worker_run = {("base" if "base" in job else "v"): seconds for job, seconds in ran.items()}
    for title, (seconds, _) in done.items():
        # the recorded time is the worker's own run time, not the time since it was handed on
        assert abs(seconds - worker_run["base" if "base" in title else "v"]) < 0.5, (title, seconds, worker_run)
    markers = [json.loads(p.read_text()) for p in work.rglob("*.json") if "placement" in p.read_text()]
    queued = sorted(m["placement"]["queued_s"] for m in markers if "queued_s" in m.get("placement", {}))
    assert len(queued) == 2 and queued[1] >= 0.8 * first_times[0] and queued[0] < queued[1], queued  # recorded apart
