"""`captrack import --format nemo`: NeMo Evaluator 0.3.0 runs written by nel's own writer, imported and compared.

The benchmark folders are written by nemo_evaluator's ``build_artifact_bundle`` + ``write_all`` (what ``nel eval``
calls) in the Python 3.12 tool environment (conftest.py); nel's own reading of them (``load_paired_records``) and
its flip report (``build_flip_report``, what ``nel compare`` counts) are the reference.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_writer

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run

TASK = "captrack_tool_arith"  # a benchmark outside captrack's taxonomy: its outcomes are what nel reported
N, REPEATS = 40, 2


def _reward(model: str, i: int, rep: int) -> float:
    if model == "base":
        return float((i * 7 + rep) % 3 != 0)
    return float((i * 5 + rep * 3) % 4 != 0)


def _records(model: str) -> list[dict]:  # type: ignore[type-arg]
    return [{"problem_idx": i, "repeat": rep, "reward": _reward(model, i, rep), "scorer_rewards": {},
             "prompt": f"What is {i} + {i}?", "model_response": f"{model} says {2 * i if _reward(model, i, rep) else i}",
             "extracted_answer": str(2 * i), "expected_answer": str(2 * i), "scoring_details": {"method": "exact"},
             "metadata": {"category": "arith"}, "tokens": 5, "latency_ms": 1.0}
            for i in range(N) for rep in range(REPEATS)]


@pytest.fixture(scope="module")
def nel_runs(tool_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("nel")
    spec = {"runs": {m: {TASK: _records(m)} for m in ("base", "cand")}, "repeats": REPEATS, "pairs": [["base", "cand"]]}
    (root / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    run_writer(tool_python, "nemo_bundles.py", str(root / "spec.json"), str(root / "out"))
    return root / "out"


def _imported_values(run: Path) -> dict[tuple[int, int], float]:
    """(problem_idx, replicate) -> the value captrack stored, read from the run's results and samples files."""
    values = {}
    for results in sorted(run.rglob("results_*.json")):
        replicate = json.loads(results.read_text())["config"]["random_seed"]
        samples = results.with_name(f"samples_{TASK}_{results.stem.removeprefix('results_')}.jsonl")
        for line in samples.read_text().splitlines():
            row = json.loads(line)
            values[(int(row["doc"]["id"]), replicate)] = row["outcome"]
    return values


def test_a_nel_run_imports_with_nels_own_rewards_and_repeats_as_replicates(nel_runs: Path, tmp_path: Path) -> None:
    reported = json.loads((nel_runs / "reported.json").read_text())
    assert reported["version"] == "0.3.0"
    result = import_run(nel_runs / "base", "nemo", tmp_path / "base")
    assert result.provenance["outcomes"].startswith("NeMo Evaluator's own reward")
    got = _imported_values(tmp_path / "base")
    want = {(pid, rep): reward for pid, rep, reward in reported["rewards"][f"base/{TASK}"]}
    assert len(got) == N * REPEATS and got == want
    data = json.loads(result.results_file.read_text())
    assert data["captrack_import"]["metrics"] == {TASK: "outcome"}


def test_the_comparison_counts_the_flips_nel_compare_reports(nel_runs: Path, tmp_path: Path) -> None:
    for model in ("base", "cand"):
        assert main(["import", str(nel_runs / model), "--format", "nemo", "--out", str(tmp_path / model)]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(out), "--bootstrap", "0"]) == 0
    flips = json.loads((nel_runs / "reported.json").read_text())["flips"][f"cand/{TASK}"]
    transitions = pd.read_csv(out / "transitions.csv")
    row = transitions[(transitions["task"] == TASK) & (transitions["metric"] == "outcome")].iloc[0]
    assert (int(row["n_10"]), int(row["n_01"])) == (len(flips["regressed"]), len(flips["improved"]))
    assert int(row["n_10"]) + int(row["n_01"]) > 0 and int(row["n"]) == N * REPEATS
    drift = pd.read_csv(out / "drift.csv")
    assert set(drift["metric"]) == {"outcome"} and not math.isnan(drift["variant_value"].iloc[0])


def test_a_truncated_results_file_is_refused_and_nothing_is_written(nel_runs: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken" / TASK
    broken.mkdir(parents=True)
    source = next((nel_runs / "base").iterdir())
    for path in source.iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    lines = (broken / "results.jsonl").read_text().splitlines()
    (broken / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n" + lines[-1][: len(lines[-1]) // 2])
    with pytest.raises(InputError, match=r"results.jsonl:80: not JSON"):
        import_run(broken.parent, "nemo", tmp_path / "out")
    (broken / "results.jsonl").write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(InputError, match="79 results, but its bundle says n_results 80; the file is truncated"):
        import_run(broken.parent, "nemo", tmp_path / "out")
    (broken / "results.jsonl").write_text("\n".join(lines + lines[-1:]) + "\n")
    with pytest.raises(InputError, match="81 results"):
        import_run(broken.parent, "nemo", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert not list(tmp_path.glob(".out*"))


def test_the_board_says_the_scores_are_the_tools_own(nel_runs: Path, tmp_path: Path) -> None:
    from captrack.compare.board import build_leaderboard

    store = tmp_path / "store.duckdb"
    for model in ("base", "cand"):
        import_run(nel_runs / model, "nemo", tmp_path / model)
        assert main(["ingest", str(tmp_path / model), "--store", str(store), "--name", model]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: imported\ndescription: from nel\nstore: {store}\ncomparisons:\n- base: base\n  variants:\n  - name: cand\n"
        "bootstrap: 0\n", encoding="utf-8")
    build_leaderboard(board)
    pages = html.unescape("".join(p.read_text(encoding="utf-8") for p in (board / "tasks").glob("*.html")))
    assert "the evaluating tool's own per-item outcome, imported by `captrack import` and not re-scored" in pages


def test_rescore_scores_an_lm_eval_benchmarks_responses_by_doc_index(tool_python: str, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """nel said every answer was right; captrack's task, given the same responses by problem_idx, scores its own gold."""
    from captrack.official.mirror import normalise_row, write_config

    task = "captrack_mmlu_pro_full"
    rows = []
    for doc_id, gold in {"mmlu_pro-1": "A", "mmlu_pro-2": "B", "mmlu_pro-3": "C"}.items():
        row = normalise_row({"id": doc_id, "prompt": f"captrack asks {doc_id}", "choices": ["w", "x", "y", "z"],
                             "gold": gold, "meta": {"question_id": int(doc_id[-1]), "category": "law"}}, "mmlu_pro.full")
        row["revision"] = "test-1"
        rows.append(row)
    write_config(tmp_path / "mirror", "mmlu_pro.full", rows)
    monkeypatch.setenv("CAPTRACK_DATA_DIR", str(tmp_path / "mirror"))
    responses = ["Answer: A", "Answer: D", "The answer is C.\nAnswer: C"]
    records = [{"problem_idx": i, "repeat": 0, "reward": 1.0, "prompt": f"q{i}", "model_response": text,
                "expected_answer": "?"} for i, text in enumerate(responses)]
    spec = {"runs": {"m": {f"lm-eval://{task}": records}}, "repeats": 1}
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    run_writer(tool_python, "nemo_bundles.py", str(tmp_path / "spec.json"), str(tmp_path / "nel"))
    own = import_run(tmp_path / "nel" / "m", "nemo", tmp_path / "own")
    assert json.loads(own.results_file.read_text())["results"][task]["outcome,none"] == 1.0
    import_run(tmp_path / "nel" / "m", "nemo", tmp_path / "rescored", rescore=True)
    samples = next((tmp_path / "rescored").rglob(f"samples_{task}_*.jsonl"))
    assert [json.loads(line)["acc"] for line in samples.read_text().splitlines()] == [1.0, 0.0, 1.0]
