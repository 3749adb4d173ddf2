"""`captrack import --format every-eval-ever`: instance-level logs written by Every-Eval-Ever's own converter.

Every-Eval-Ever 0.3.0 (Python >= 3.12, the tool environment of conftest.py) converts lm-eval per-sample logs
with ``LMEvalInstanceLevelAdapter.transform_and_save`` into ``<uuid>_samples.jsonl``; its own rows
(``transform_samples``) are the reference. The lm-eval logs are tests/fakeruns.py's (lm-eval 0.4.13's shape),
so the import's comparison can also be set beside captrack's direct comparison of the same lm-eval runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from conftest import run_writer
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run

TASK = "tool_qa"
N = 60


def _task(model: str) -> FakeTask:
    right = [float(i % 3 != 0) if model == "base" else float(i % 5 != 2) for i in range(N)]
    loose = [max(v, float(i % 2 == 0)) for i, v in enumerate(right)]
    return FakeTask(TASK, {"exact_match": right, "loose_match": loose}, output_type="generate_until",
                    responses={i: f"{model} answer {i}" for i in range(N)})


@pytest.fixture(scope="module")
def eee(tool_python: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("eee")
    jobs = []
    for model in ("base", "cand"):
        results = write_run(root / "lm" / model, model, [_task(model)])
        samples = next(results.parent.glob(f"samples_{TASK}_*.jsonl"))
        jobs.append({"samples": str(samples), "model": f"org/{model}", "task": TASK, "out": str(root / "eee" / model)})
    (root / "spec.json").write_text(json.dumps(jobs), encoding="utf-8")
    run_writer(tool_python, "eee_samples.py", str(root / "spec.json"))
    return root


def _imported(run: Path) -> dict[str, float]:
    samples = next(run.rglob("samples_*.jsonl"))
    return {row["doc"]["id"]: row["outcome"] for row in map(json.loads, samples.read_text().splitlines())}


def test_an_eee_log_imports_with_its_own_scores_by_sample_id(eee: Path, tmp_path: Path) -> None:
    src = next((eee / "eee" / "base").glob("*_samples.jsonl"))
    reported = json.loads((eee / "eee" / "base" / "reported.json").read_text())
    assert {r[1] for r in reported} == {"exact_match", "loose_match"}  # one row per (sample, result)
    for result_id in ("exact_match", "loose_match"):
        run = tmp_path / result_id
        result = import_run(src, "every-eval-ever", run, outcome=None if result_id == "exact_match" else result_id)
        assert result.results_file.parent.name == "org__base"
        want = {sid: score for _, rid, sid, score in reported if rid == result_id}
        assert _imported(run) == want and len(want) == N


def test_the_imported_comparison_gives_the_direct_lm_eval_comparisons_verdict(eee: Path, tmp_path: Path) -> None:
    for model in ("base", "cand"):
        assert main(["import", str(eee / "eee" / model), "--format", "every-eval-ever", "--out", str(tmp_path / model)]) == 0
    args = ["--bootstrap", "0"]
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(tmp_path / "via_eee"), *args]) == 0
    assert main(["compare", "--base", str(eee / "lm" / "base"), "--variant", f"cand={eee / 'lm' / 'cand'}",
                 "--out", str(tmp_path / "direct"), *args]) == 0
    via = pd.read_csv(tmp_path / "via_eee" / "drift.csv").set_index("task")
    direct = pd.read_csv(tmp_path / "direct" / "drift.csv").query("metric == 'exact_match'").set_index("task")
    assert via.loc[TASK, "verdict"] == direct.loc[TASK, "verdict"]
    for column in ("base_value", "variant_value", "change_ci_low", "change_ci_high"):
        assert via.loc[TASK, column] == pytest.approx(direct.loc[TASK, column])
    flips = [pd.read_csv(tmp_path / d / "transitions.csv").iloc[0] for d in ("via_eee", "direct")]
    assert (flips[0]["n_10"], flips[0]["n_01"]) == (flips[1]["n_10"], flips[1]["n_01"])


def test_duplicate_and_truncated_rows_are_refused_and_nothing_is_written(eee: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    src = next((eee / "eee" / "base").glob("*_samples.jsonl"))
    lines = src.read_text().splitlines()
    (tmp_path / "dup_samples.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    with pytest.raises(InputError, match=r"items with more than one outcome.*tool_qa/0 \(replicate 0\)"):
        import_run(tmp_path / "dup_samples.jsonl", "every-eval-ever", tmp_path / "out")
    (tmp_path / "cut_samples.jsonl").write_text("\n".join(lines)[: -40])
    with pytest.raises(InputError, match=rf"cut_samples.jsonl:{len(lines)}: not JSON"):
        import_run(tmp_path / "cut_samples.jsonl", "every-eval-ever", tmp_path / "out")
    with pytest.raises(InputError, match="no rows with evaluation_result_id 'f1'"):
        import_run(src, "every-eval-ever", tmp_path / "out", outcome="f1")
    capsys.readouterr()
    assert main(["import", str(tmp_path / "dup_samples.jsonl"), "--format", "every-eval-ever", "--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and "nothing was written" in err
    assert not (tmp_path / "out").exists()
