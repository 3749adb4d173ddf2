"""`captrack run` with `import:` checkpoints: generations made elsewhere → data mirror → import → leaderboard."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import run_experiment

# Six MMLU-Pro-shaped questions in two categories (gold A..F), and what two "models" answered.
QUESTIONS = [{"question_id": q, "question": f"question {q}?", "options": ["w", "x", "y", "z", "v", "u"],
              "answer": "ABCDEF"[q], "answer_index": q, "cot_content": "", "category": "law" if q < 3 else "math",
              "src": "test"} for q in range(6)]
BASE = [1, 1, 0, 1, 0, 0]     # law: 1 1 0   math: 1 0 0
TUNED = [0, 1, 1, 1, 1, 1]    # law: 0 1 1   math: 1 1 1


def _outputs(path: Path, correct: list[int]) -> Path:
    """An MMLU-Pro model_outputs JSON list: right answers where `correct`, a wrong letter elsewhere."""
    items = [{**q, "generated_text": f"Let's think. Answer: {q['answer'] if ok else 'J'}"} for q, ok in zip(QUESTIONS, correct, strict=True)]
    path.write_text(json.dumps(items), encoding="utf-8")
    return path


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shared = tmp_path / "shared"
    (shared / "data" / "mmlu_pro").mkdir(parents=True)
    (shared / "data" / "mmlu_pro" / "test.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    _outputs(shared / "base.json", BASE)
    _outputs(shared / "tuned.json", TUNED)
    monkeypatch.setenv("MY_SHARED", str(shared))
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    path = tmp_path / "exp" / "experiment.yaml"
    path.parent.mkdir()
    path.write_text(
        "name: t\nworkdir: work\nleaderboard: board\nby: [category]\n"
        'data: {sources: "${MY_SHARED:-nowhere}/data", configs: [mmlu_pro.full]}\n'
        'base: [{name: base, import: {format: mmlu-pro, path: "${MY_SHARED:-nowhere}/base.json"}}]\n'
        'variants:\n  - {name: tuned, base: base, algorithm: SFT, import: {format: mmlu-pro, path: "${MY_SHARED:-nowhere}/tuned.json"}}\n'
    )
    return path


def test_imported_generations_become_a_leaderboard_and_are_reused(manifest: Path) -> None:
    first = run_experiment(load_experiment(manifest))
    assert [t.split(" ")[0] for t in first] == ["build", "import", "import", "ingest", "compare"]
    board = manifest.parent / "board"
    (row,) = pd.read_csv(board / "transitions.csv").itertuples()
    assert (row.variant, row.task, row.n, row.n_11, row.n_10, row.n_01, row.n_00) == ("tuned", "captrack_mmlu_pro_full", 6, 2, 1, 3, 0)
    by = pd.read_csv(board / "by_category.csv").set_index("category")
    assert by.loc["law", ["n_11", "n_10", "n_01", "n_00"]].tolist() == [1, 1, 1, 0]
    assert by.loc["math", ["n_11", "n_10", "n_01", "n_00"]].tolist() == [1, 0, 2, 0]
    (pair,) = pd.read_csv(board / "pairs.csv").itertuples()
    assert (pair.base, pair.base_value, pair.variant_value) == ("base", 0.5, pytest.approx(5 / 6))
    assert pair.delta_ci_low <= pair.delta <= pair.delta_ci_high
    readme = (board / "README.md").read_text()
    assert "## By category" in readme and "base → tuned" in readme
    results = next((manifest.parent / "work" / "runs" / "tuned" / "seed0").rglob("results_*.json"))
    assert json.loads(results.read_text())["captrack_import"]["format"] == "mmlu-pro"

    assert run_experiment(load_experiment(manifest)) == {}  # nothing changed: everything reused
    _outputs(Path(json.loads(results.read_text())["captrack_import"]["source"]), [1] * 6)  # new generations
    again = run_experiment(load_experiment(manifest))
    assert [t.split(" ")[0] + " " + t.split(" ")[1] for t in again] == ["import tuned", "ingest all", "compare and"]
    assert pd.read_csv(manifest.parent / "board" / "transitions.csv")["n_10"].tolist() == [0]


def test_missing_source_data_is_named_before_any_work(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MY_SHARED")
    with pytest.raises(InputError, match=r"import path .*nowhere/base.json does not exist; set CAPTRACK_SHARED"):
        run_experiment(load_experiment(manifest))
    assert not (manifest.parent / "work").exists()


def test_an_import_with_a_model_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("base: {name: b, import: {format: mmlu-pro, path: x.json}, model_args: {pretrained: y}}\n"
                    "variants: [{name: v, import: {format: mmlu-pro, path: z.json}}]\n")
    with pytest.raises(InputError, match="gives import and a model"):
        load_experiment(path)


def test_a_named_mirror_that_is_missing_is_refused_before_any_work(manifest: Path) -> None:
    text = manifest.read_text().replace('data: {sources: "${MY_SHARED:-nowhere}/data", configs: [mmlu_pro.full]}',
                                        "data: {dir: no-mirror-here}")
    manifest.write_text(text)
    with pytest.raises(InputError, match=r"data.dir .*no-mirror-here does not exist; build it with `captrack data build"):
        run_experiment(load_experiment(manifest))
    assert not (manifest.parent / "work").exists()


def test_fail_on_gates_the_run_on_its_board_and_margin_reaches_the_verdicts(manifest: Path) -> None:
    from captrack.cli import main
    from captrack.gate import GATE_EXIT

    assert main(["run", str(manifest), "--fail-on", "regressed"]) == 0  # six items: nothing regressed
    assert main(["run", str(manifest), "--fail-on", "inconclusive"]) == GATE_EXIT  # ... and nothing settled
    caps = pd.read_csv(manifest.parent / "board" / "capabilities.csv").set_index("key")
    assert caps.loc["C1", "verdict"] == "inconclusive"
    manifest.write_text(manifest.read_text() + "margin: 80\n")  # a margin wide enough for six items
    assert main(["run", str(manifest), "--fail-on", "inconclusive"]) == 0
    assert "margin: 80" in (manifest.parent / "board" / "leaderboard.yaml").read_text()
    caps = pd.read_csv(manifest.parent / "board" / "capabilities.csv").set_index("key")
    assert caps.loc["C1", "verdict"] == "equivalent"


def test_a_run_builds_lm_evals_task_index_once(manifest: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks, imports and scoring in one `captrack run` process share one TaskManager (issue 41)."""
    import lm_eval.tasks

    from captrack.cli import main
    from captrack.lmeval import integration

    built = []
    original = lm_eval.tasks.TaskManager.__init__

    def counted(self: object, *args: object, **kwargs: object) -> None:
        built.append(kwargs.get("include_path"))
        original(self, *args, **kwargs)

    monkeypatch.setattr(integration, "_MANAGERS", {})
    monkeypatch.setattr(lm_eval.tasks.TaskManager, "__init__", counted)
    assert main(["run", str(manifest)]) == 0
    assert len(built) == 1, built
