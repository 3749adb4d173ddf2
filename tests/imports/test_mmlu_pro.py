"""`captrack import --format mmlu-pro` on the MMLU-Pro authors' published outputs (read from the shared folder)."""

from __future__ import annotations

import json
import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
from shared_paths import shared_dir

from captrack.imports import import_run
from captrack.metrics import score
from captrack.official.configs import CONFIGS
from captrack.official.mirror import normalise_row, write_config
from captrack.official.sources import get_builders
from captrack.official.tasks import scoring_doc

DATA = shared_dir() / "data"
OUTPUTS = sorted((DATA / "mmlu_pro_outputs").glob("model_outputs_*.zip"))
pytestmark = pytest.mark.skipif(not OUTPUTS or not (DATA / "mmlu_pro" / "test.jsonl").is_file(),
                                reason="no MMLU-Pro outputs in the shared data folder ($CAPTRACK_SHARED/data)")
TASK = "captrack_mmlu_pro_full"


@pytest.fixture(scope="module")
def full_rows() -> dict[str, dict[str, Any]]:
    """Every row of mmlu_pro.full as the offline builder makes it, by id."""
    config = CONFIGS["mmlu_pro.full"]
    rows = [normalise_row(r, config.name) for r in get_builders()[config.name](DATA, config)]
    return {r["id"]: {**r, "revision": "test"} for r in rows}


def _items(path: Path) -> list[dict[str, Any]]:
    with zipfile.ZipFile(path) as archive:
        loaded: list[dict[str, Any]] = json.loads(archive.read(archive.namelist()[0]))
    return loaded


def _sample_zip(tmp_path: Path, source: Path, items: list[dict[str, Any]]) -> Path:
    """A zip laid out like `source` (same names) holding only `items`."""
    target = tmp_path / source.name
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as archive:
        archive.writestr(original.namelist()[0], json.dumps(items))
    return target


def _mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rows: list[dict[str, Any]]) -> None:
    write_config(tmp_path / "mirror", "mmlu_pro.full", rows)
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))


def _verdicts(run: Path) -> dict[str, float]:
    samples = next(run.rglob(f"samples_{TASK}_*.jsonl"))
    return {json.loads(line)["doc"]["id"]: float(json.loads(line)["acc"]) for line in samples.read_text().splitlines()}


def test_full_task_has_every_test_item_keyed_by_question_id(full_rows: dict[str, dict[str, Any]]) -> None:
    assert len(full_rows) == 12032
    row = full_rows["mmlu_pro-70"]
    meta = json.loads(row["meta"])
    assert meta["question_id"] == 70 and meta["category"] == "business" and row["gold"] == "I"
    assert full_rows["mmlu_pro-3983"]["gold"] == "C"  # the gold letter wins over the off answer_index


def test_a_small_real_zip_is_imported_under_the_model_name(full_rows: dict[str, dict[str, Any]], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    source = next(p for p in OUTPUTS if p.name == "model_outputs_Meta-Llama-3_1-8B_5shots.zip")
    items = _items(source)[:5]
    keys = [f"mmlu_pro-{int(i['question_id'])}" for i in items]
    _mirror(tmp_path, monkeypatch, [full_rows[k] for k in keys])
    result = import_run(_sample_zip(tmp_path, source, items), "mmlu-pro", tmp_path / "run")
    data = json.loads(result.results_file.read_text())
    assert data["model_name"] == "Meta-Llama-3_1-8B" and data["captrack_import"]["format"] == "mmlu-pro"
    assert set(_verdicts(tmp_path / "run")) == set(keys)


@pytest.mark.parametrize("source", OUTPUTS, ids=[p.stem for p in OUTPUTS])
def test_import_reproduces_the_scorer_on_generated_text(source: Path, full_rows: dict[str, dict[str, Any]],
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [i for i in _items(source) if f"mmlu_pro-{int(i['question_id'])}" in full_rows]
    picked = random.Random(0).sample(items, 200)
    keys = [f"mmlu_pro-{int(i['question_id'])}" for i in picked]
    _mirror(tmp_path, monkeypatch, [full_rows[k] for k in keys])
    import_run(_sample_zip(tmp_path, source, picked), "mmlu-pro", tmp_path / "run")
    direct = {k: score("mc_letter", scoring_doc(full_rows[k]), i["generated_text"])["acc"] for k, i in zip(keys, picked, strict=True)}
    got = _verdicts(tmp_path / "run")
    assert got == direct
    assert 0 < sum(got.values()) < len(got)  # both verdicts occur, so the comparison can fail


@pytest.mark.slow
def test_a_whole_file_reproduces_the_scorer_item_by_item(full_rows: dict[str, dict[str, Any]], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    source = next(p for p in OUTPUTS if p.name == "model_outputs_Meta-Llama-3_1-8B-Instruct_5shots.zip")
    _mirror(tmp_path, monkeypatch, list(full_rows.values()))
    import_run(source, "mmlu-pro", tmp_path / "run")
    direct = {f"mmlu_pro-{int(i['question_id'])}": score("mc_letter", scoring_doc(full_rows[f"mmlu_pro-{int(i['question_id'])}"]),
                                                          i["generated_text"])["acc"] for i in _items(source)}
    assert _verdicts(tmp_path / "run") == direct and len(direct) == 12032
