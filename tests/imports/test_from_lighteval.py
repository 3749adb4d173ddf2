"""`captrack import --format lighteval`: details parquet files written by lighteval's own EvaluationTracker.

The details are made of lighteval's classes (Doc, ModelResponse, DetailsLogger.Detail) and saved by
``EvaluationTracker.save()`` (details/<model>/<date>/details_<task>_<date>.parquet, the files post-forget reads);
lighteval's ``load_details_datasets`` reads them back as the reference. (lighteval 0.13.0's
``DetailsLogger.log`` hashes the query with ``xxhash.xxh64(str)``, which xxhash 4 refuses; the Detail records
it would append are appended as it does.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from captrack.cli import main
from captrack.errors import InputError, UnknownNameError
from captrack.imports import import_run

pytest.importorskip("lighteval.logging.evaluation_tracker", reason="lighteval (the dev extra) writes the details")
TASK = "custom|tool_facts|0"
N = 36


def _save(root: Path, model: str) -> tuple[Path, dict[str, float]]:
    """lighteval's details folder of `model` and the per-document acc lighteval reads back from it."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.logging.info_loggers import DetailsLogger
    from lighteval.models.dummy.dummy_model import DummyModelConfig
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    tracker = EvaluationTracker(output_dir=str(root), save_details=True)
    tracker.general_config_logger.model_config = DummyModelConfig(model_name=f"org/{model}")
    tracker.general_config_logger.model_name = f"org/{model}"
    for i in range(N):
        right = (i % 3 != 0) if model == "base" else (i % 4 != 1)
        doc = Doc(query=f"Capital of country {i}?", choices=[f"city {i}", "elsewhere"], gold_index=0, id=f"fact-{i}",
                  task_name=TASK)
        response = ModelResponse(text=[f"city {i}" if right else "elsewhere"])
        metric = {"acc": float(right), "acc_norm": float(right or i % 2 == 0)}
        tracker.details_logger.details[TASK].append(DetailsLogger.Detail(doc, response, metric))
    tracker.save()
    folder = next((root / "details" / "org" / model).iterdir())
    details = tracker.load_details_datasets(folder.name, [TASK.rsplit("|", 1)[0]])[TASK]
    return folder, {row["doc"]["id"]: row["metric"]["acc"] for row in details}


def _imported(run: Path) -> dict[str, float]:
    samples = next(run.rglob("samples_*.jsonl"))
    return {row["doc"]["id"]: row["outcome"] for row in map(json.loads, samples.read_text().splitlines())}


def test_lighteval_details_import_with_lightevals_own_metric(tmp_path: Path) -> None:
    folder, reported = _save(tmp_path / "le", "base")
    result = import_run(folder, "lighteval", tmp_path / "run")
    assert result.results_file.parent.name == "base"
    assert _imported(tmp_path / "run") == reported and len(reported) == N
    note = json.loads(result.results_file.read_text())["captrack_import"]["outcomes"]
    assert note.startswith("lighteval's own metric acc")
    import_run(folder, "lighteval", tmp_path / "norm", outcome="acc_norm")
    assert sum(_imported(tmp_path / "norm").values()) > sum(reported.values())


def test_compared_the_flips_are_the_documents_lighteval_scored_differently(tmp_path: Path) -> None:
    runs = {m: _save(tmp_path / "le", m) for m in ("base", "cand")}
    for m, (folder, _) in runs.items():
        assert main(["import", str(folder), "--format", "lighteval", "--out", str(tmp_path / m)]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(out), "--bootstrap", "0"]) == 0
    base, cand = runs["base"][1], runs["cand"][1]
    row = pd.read_csv(out / "transitions.csv").iloc[0]
    assert row["task"] == "custom|tool_facts" and row["metric"] == "outcome"
    assert int(row["n_10"]) == sum(base[k] == 1 and cand[k] == 0 for k in base)
    assert int(row["n_01"]) == sum(base[k] == 0 and cand[k] == 1 for k in base)
    assert int(row["n"]) == N


def test_bad_details_are_refused_in_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    folder, _ = _save(tmp_path / "le", "base")
    path = next(folder.glob("*.parquet"))
    broken = tmp_path / "broken" / folder.name
    broken.mkdir(parents=True)
    data = path.read_bytes()
    (broken / path.name).write_bytes(data[: len(data) - 100])
    with pytest.raises(InputError, match=r"not a readable Parquet file .*truncated or damaged"):
        import_run(broken, "lighteval", tmp_path / "out")
    with pytest.raises(UnknownNameError, match=r"unknown task in .*'custom\|tool_fact'"):
        import_run(folder, "lighteval", tmp_path / "out", task="custom|tool_fact")
    with pytest.raises(InputError, match=r"no metric 'f1' \(the file has acc, acc_norm\)"):
        import_run(folder, "lighteval", tmp_path / "out", outcome="f1")
    assert not (tmp_path / "out").exists()
