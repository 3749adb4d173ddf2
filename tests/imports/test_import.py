"""`captrack import` with the captrack-replay backend: responses made elsewhere, scored by captrack's tasks."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run
from captrack.labels import VariantLabels
from captrack.official.mirror import normalise_row, write_config
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store

TASK = "captrack_mmlu_pro_full"
GOLD = {"mmlu_pro-1": "A", "mmlu_pro-2": "B", "mmlu_pro-3": "C"}


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A mirror whose mmlu_pro.full holds three made-up questions (gold A, B, C)."""
    rows = []
    for doc_id, gold in GOLD.items():
        row = normalise_row({"id": doc_id, "prompt": f"captrack asks {doc_id}", "choices": ["w", "x", "y", "z"],
                             "gold": gold, "meta": {"question_id": int(doc_id[-1]), "category": "law"}}, "mmlu_pro.full")
        row["revision"] = "test-1"
        rows.append(row)
    write_config(tmp_path / "mirror", "mmlu_pro.full", rows)
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))
    return tmp_path / "mirror"


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _samples(out: Path, task: str = TASK) -> dict[str, dict]:  # type: ignore[type-arg]
    path = next(out.rglob(f"samples_{task}_*.jsonl"))
    return {json.loads(line)["doc"]["id"]: json.loads(line) for line in path.read_text().splitlines()}


def _nothing_written(out: Path) -> None:
    assert not out.exists()
    assert not list(out.parent.glob(f".{out.name}.import-*")), "the temporary folder was left behind"


ANSWERS = [
    {"id": "mmlu_pro-1", "response": "Answer: A", "prompt": "their own prompt for question 1"},
    {"id": "mmlu_pro-2", "response": "Answer: D"},
    {"id": "mmlu_pro-3", "response": "The answer is C.\nAnswer: C"},
]


def test_jsonl_import_is_an_ordinary_run_that_records_its_source(mirror: Path, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", ANSWERS)
    result = import_run(src, "jsonl", tmp_path / "run", task=TASK, name="my-model")
    data = json.loads(result.results_file.read_text())
    assert data["results"][TASK]["acc,none"] == pytest.approx(2 / 3)
    assert data["model_name"] == "my-model"
    sha = hashlib.sha256(src.read_bytes()).hexdigest()
    assert data["captrack_import"]["sha256"] == sha and data["captrack_import"]["format"] == "jsonl"
    assert data["config"]["model_args"]["source"] == str(src.resolve())
    assert Path(data["config"]["model_args"]["responses"]).is_file()  # the replay file moved with the run
    samples = _samples(tmp_path / "run")
    assert {k: s["acc"] for k, s in samples.items()} == {"mmlu_pro-1": 1.0, "mmlu_pro-2": 0.0, "mmlu_pro-3": 1.0}
    # the prompt that produced a response is what the log shows; captrack's when the source kept none
    assert samples["mmlu_pro-1"]["arguments"]["gen_args_0"]["arg_0"] == "their own prompt for question 1"
    assert samples["mmlu_pro-2"]["arguments"]["gen_args_0"]["arg_0"] == "captrack asks mmlu_pro-2"
    with Store(":memory:") as store:  # ingest reads it unchanged
        (ingested,) = store.ingest(discover_runs(tmp_path / "run"), VariantLabels(name="my-model"))
    assert ingested.rows == 3


def test_responses_are_matched_by_document_not_by_order(mirror: Path, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [ANSWERS[2], {"doc_id": 1, "response": "Answer: B"}, ANSWERS[0]])
    import_run(src, "jsonl", tmp_path / "run", task=TASK)
    assert {k: s["acc"] for k, s in _samples(tmp_path / "run").items()} == {k: 1.0 for k in GOLD}


def test_a_missing_id_is_named_and_nothing_is_written(mirror: Path, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", ANSWERS[:2])
    with pytest.raises(InputError, match=r"in task captrack_mmlu_pro_full but not in the source: 1 id\(s\): mmlu_pro-3"):
        import_run(src, "jsonl", tmp_path / "run", task=TASK)
    _nothing_written(tmp_path / "run")


def test_a_duplicated_id_is_named_and_nothing_is_written(mirror: Path, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [*ANSWERS, {"id": "mmlu_pro-2", "response": "Answer: B"}])
    with pytest.raises(InputError, match=r"more than one response: 1 id\(s\): captrack_mmlu_pro_full/mmlu_pro-2"):
        import_run(src, "jsonl", tmp_path / "run", task=TASK, allow_partial=True)
    _nothing_written(tmp_path / "run")


def test_allow_partial_scores_the_intersection_and_lists_the_rest(mirror: Path, tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [*ANSWERS[:2], {"id": "mmlu_pro-99", "response": "Answer: A"}])
    with pytest.raises(InputError, match=r"not in task captrack_mmlu_pro_full: 1 id\(s\): mmlu_pro-99"):
        import_run(src, "jsonl", tmp_path / "run", task=TASK)
    _nothing_written(tmp_path / "run")
    result = import_run(src, "jsonl", tmp_path / "run", task=TASK, allow_partial=True)
    (matched,) = result.matched
    assert (matched.task_only, matched.source_only) == (["mmlu_pro-3"], ["mmlu_pro-99"])
    assert set(_samples(tmp_path / "run")) == {"mmlu_pro-1", "mmlu_pro-2"}
    recorded = json.loads(result.results_file.read_text())["captrack_import"]["tasks"][TASK]
    assert recorded["without_response"] == ["mmlu_pro-3"] and recorded["matching_no_document"] == ["mmlu_pro-99"]


def test_loglikelihood_tasks_are_refused_with_the_task_named(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", [{"doc_id": i, "response": "Paris"} for i in range(200)])
    with pytest.raises(InputError, match=r"cannot answer loglikelihood requests \(task\(s\) captrack_probe_c1_facts\)"):
        import_run(src, "jsonl", tmp_path / "run", task="captrack_probe_c1_facts", allow_partial=True)
    _nothing_written(tmp_path / "run")


def test_an_existing_run_dir_is_never_overwritten(mirror: Path, tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keep.txt").write_text("mine")
    with pytest.raises(InputError, match="already exists and is not empty"):
        import_run(_jsonl(tmp_path / "gens.jsonl", ANSWERS), "jsonl", tmp_path / "run", task=TASK)
    assert (tmp_path / "run" / "keep.txt").read_text() == "mine"


def test_captrack_layout_maps_file_names_to_tasks(mirror: Path, tmp_path: Path) -> None:
    folder = tmp_path / "model_responses" / "llama-sft"
    folder.mkdir(parents=True)
    with (folder / "mmlu_pro.full.csv").open("w") as handle:
        handle.write("id,outputs\n" + "".join(f"{r['id']},{r['response'].splitlines()[-1]}\n" for r in ANSWERS))
    result = import_run(folder, "captrack", tmp_path / "run")
    assert json.loads(result.results_file.read_text())["model_name"] == "llama-sft"
    assert {k: s["acc"] for k, s in _samples(tmp_path / "run").items()} == {"mmlu_pro-1": 1.0, "mmlu_pro-2": 0.0, "mmlu_pro-3": 1.0}


def test_cli_reports_success_and_errors(mirror: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _jsonl(tmp_path / "gens.jsonl", ANSWERS[:2])
    assert main(["import", str(src), "--format", "jsonl", "--task", TASK, "--out", str(tmp_path / "a")]) == 1
    assert "mmlu_pro-3" in capsys.readouterr().err
    assert main(["import", str(src), "--format", "jsonl", "--task", TASK, "--out", str(tmp_path / "b"), "--allow-partial"]) == 0
    assert "captrack_mmlu_pro_full: 2 of 3 documents scored" in capsys.readouterr().out
    assert main(["import", str(src), "--format", "jsonl", "--out", str(tmp_path / "c")]) == 1
    assert "needs --task" in capsys.readouterr().err


def test_the_replay_backend_is_registered_for_lm_eval() -> None:
    from lm_eval.api.registry import get_model

    from captrack.backends import register_backends
    from captrack.backends.recorded_answers import ReplayLM

    assert "captrack-replay" in register_backends()
    assert get_model("captrack-replay") is ReplayLM


def test_many_missing_ids_are_counted_and_the_first_named() -> None:
    from captrack.backends.recorded_answers import missing_message

    message = missing_message("no response for", [f"t/doc-{i:03d}" for i in range(45)], "fix it")
    assert message.startswith("no response for: 45 id(s): t/doc-000, t/doc-001") and "... and 25 more; fix it" in message
