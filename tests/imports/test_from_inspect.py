"""`captrack import --format inspect`: Inspect .eval logs written by inspect_ai's own writer, imported and compared.

The logs are built with inspect_ai's log classes (EvalLog, EvalSample, Score, ModelOutput) and written by its
``write_eval_log`` (a ZIP with Zstandard members, as Inspect writes them); Inspect's own ``read_eval_log`` and
``value_to_float`` give the per-item outcomes the import must reproduce.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from captrack.cli import main
from captrack.errors import InputError, UnknownNameError
from captrack.imports import import_run

inspect_log = pytest.importorskip("inspect_ai.log", reason="inspect_ai (the dev extra) writes the logs")
TASK = "arith"
N, EPOCHS = 30, 2


def _value(model: str, i: int, epoch: int) -> str:
    if model == "base":
        return "C" if (i + epoch) % 3 else "I"
    return "C" if (i * 2 + epoch) % 5 else ("P" if i % 7 == 0 else "I")


def _write(path: Path, model: str) -> Path:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    spec = EvalSpec(created="2026-11-27T19:00:00+00:00", task=TASK, dataset=EvalDataset(name=TASK, samples=N),
                    model=f"mockllm/{model}", config=EvalConfig(epochs=EPOCHS))
    samples = []
    for epoch in range(1, EPOCHS + 1):
        for i in range(N):
            scored = not (model == "cand" and i == 3 and epoch == 2)  # one errored sample: no score (NaN)
            samples.append(EvalSample(
                id=f"q{i}", epoch=epoch, input=f"What is {i}+1?", target=str(i + 1),
                output=ModelOutput.from_content(f"mockllm/{model}", f"{model}: {i + 1}"),
                scores={"match": Score(value=_value(model, i, epoch), answer=str(i + 1))} if scored else {}))
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(path))
    return path


def _reported(path: Path) -> dict[tuple[str, int], float]:
    """(sample id, epoch - 1) -> the outcome Inspect itself reads from the log (value_to_float)."""
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    to_float = value_to_float()
    log = read_eval_log(str(path))
    assert log.samples
    return {(str(s.id), s.epoch - 1): to_float(s.scores["match"].value) if s.scores else math.nan for s in log.samples}


def _imported(run: Path) -> dict[tuple[str, int], float]:
    values = {}
    for results in sorted(run.rglob("results_*.json")):
        replicate = json.loads(results.read_text())["config"]["random_seed"]
        for samples in results.parent.glob(f"samples_*_{results.stem.removeprefix('results_')}.jsonl"):
            for line in samples.read_text().splitlines():
                row = json.loads(line)
                metric = row["metrics"][0]
                values[(row["doc"]["id"], replicate)] = math.nan if row[metric] is None else row[metric]
    return values


def _same(a: dict[tuple[str, int], float], b: dict[tuple[str, int], float]) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] or (math.isnan(a[k]) and math.isnan(b[k])) for k in a)


def test_an_inspect_log_imports_with_inspects_own_scores_and_epochs_as_replicates(tmp_path: Path) -> None:
    log = _write(tmp_path / "cand.eval", "cand")
    assert any(i.compress_type == 93 for i in __import__("zipfile").ZipFile(log).infolist())  # Zstandard members
    result = import_run(log, "inspect", tmp_path / "run")
    got, want = _imported(tmp_path / "run"), _reported(log)
    assert len(want) == N * EPOCHS and _same(got, want)
    assert sum(math.isnan(v) for v in got.values()) == 1  # the errored sample is unscored, not 0
    data = json.loads(result.results_file.read_text())
    assert data["captrack_import"]["metrics"] == {TASK: "outcome"}
    assert "Inspect's own score" in data["captrack_import"]["outcomes"] and "match" in data["captrack_import"]["outcomes"]


def test_compared_the_flips_are_the_items_inspect_scored_differently(tmp_path: Path) -> None:
    logs = {m: _write(tmp_path / f"{m}.eval", m) for m in ("base", "cand")}
    for m, log in logs.items():
        assert main(["import", str(log), "--format", "inspect", "--out", str(tmp_path / m), "--name", m]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(out), "--bootstrap", "0"]) == 0
    base, cand = _reported(logs["base"]), _reported(logs["cand"])
    replicates = pd.read_csv(out / "replicates.csv")
    assert list(replicates["replicate"]) == list(range(EPOCHS)) and set(replicates["metric"]) == {"outcome"}
    for row in replicates.itertuples():  # per epoch, over the items both scored: Inspect's own values
        paired = [k for k in base if k[1] == row.replicate and not math.isnan(cand[k])]
        assert row.n == len(paired)
        assert math.isclose(row.base_value, sum(base[k] for k in paired) / len(paired))
        assert math.isclose(row.variant_value, sum(cand[k] for k in paired) / len(paired))


def test_bad_logs_are_refused_in_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    log = _write(tmp_path / "cand.eval", "cand")
    data = log.read_bytes()
    (tmp_path / "cut.eval").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match=r"cut\.eval: not an Inspect \.eval log .*truncated or damaged"):
        import_run(tmp_path / "cut.eval", "inspect", tmp_path / "out")
    with pytest.raises(UnknownNameError, match=r"unknown task in .* 'arithm'; did you mean 'arith'"):
        import_run(log, "inspect", tmp_path / "out", task="arithm")
    with pytest.raises(InputError, match=r"no sample has a score from scorer 'nosuch' \(scorers: match\)"):
        import_run(log, "inspect", tmp_path / "out", outcome="nosuch")
    assert not (tmp_path / "out").exists()


def test_rescore_scores_the_completions_with_the_captrack_task_instead(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Inspect called every answer correct; captrack's task, given the same completions, scores its own gold."""
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

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
    answers = {"mmlu_pro-1": "Answer: A", "mmlu_pro-2": "Answer: D", "mmlu_pro-3": "The answer is C.\nAnswer: C"}
    spec = EvalSpec(created="2026-11-27T19:00:00+00:00", task="mmlu_pro", dataset=EvalDataset(name="mmlu_pro", samples=3),
                    model="mockllm/model", config=EvalConfig())
    samples = [EvalSample(id=i, epoch=1, input=f"captrack asks {i}", target="?", output=ModelOutput.from_content("m", text),
                          scores={"match": Score(value="C")}) for i, text in answers.items()]
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(tmp_path / "m.eval"))
    own = import_run(tmp_path / "m.eval", "inspect", tmp_path / "own")
    assert set(_imported(tmp_path / "own").values()) == {1.0} and "outcomes" in own.provenance
    rescored = import_run(tmp_path / "m.eval", "inspect", tmp_path / "rescored", task=task, rescore=True)
    samples_file = next((tmp_path / "rescored").rglob(f"samples_{task}_*.jsonl"))
    acc = {row["doc"]["id"]: row["acc"] for row in map(json.loads, samples_file.read_text().splitlines())}
    assert acc == {"mmlu_pro-1": 1.0, "mmlu_pro-2": 0.0, "mmlu_pro-3": 1.0}
    assert "outcomes" not in rescored.provenance and rescored.provenance["format"] == "inspect"
