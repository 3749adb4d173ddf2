"""A model name that cannot name a run folder is refused naming where it came from: the tool's own field in the
file that holds it (NeMo's config.model, Every-Eval-Ever's model_id), the source's name, or --name. The sources are
written by hand with the keys the readers use (the tools' own writers need Python 3.12, test_from_nemo.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captrack.errors import InputError
from captrack.imports import import_run


def _nemo(folder: Path, model: str) -> Path:
    folder.mkdir(parents=True)
    bundle = {"benchmark": {"name": "captrack_tool_arith"}, "config": {"model": model}, "n_results": 3}
    (folder / "eval-1.json").write_text(json.dumps(bundle), encoding="utf-8")
    rows = [{"problem_idx": i, "reward": 1.0} for i in range(3)]
    (folder / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


def _eee(path: Path, model: str | None) -> Path:
    rows = [{"evaluation_name": "arith", "evaluation_result_id": "acc", "sample_id": f"s{i}", "evaluation": {"score": 1.0},
             **({"model_id": model} if model is not None else {})} for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_nemo_config_model_is_named_as_the_origin(tmp_path: Path) -> None:
    src = _nemo(tmp_path / "mymodel", "..")
    with pytest.raises(InputError, match=r"model name '\.\.' \(from config\.model in .*mymodel/eval-1\.json\)") as caught:
        import_run(src, "nemo", tmp_path / "out")
    assert "file name" not in str(caught.value) and "pass --name" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_an_every_eval_ever_model_id_is_named_as_the_origin(tmp_path: Path) -> None:
    src = _eee(tmp_path / "abc_samples.jsonl", "..")
    with pytest.raises(InputError, match=r"model name '\.\.' \(from model_id in .*abc_samples\.jsonl\)") as caught:
        import_run(src, "every-eval-ever", tmp_path / "out")
    assert "file name" not in str(caught.value)


def test_an_every_eval_ever_log_without_model_id_is_named_after_its_file(tmp_path: Path) -> None:
    result = import_run(_eee(tmp_path / "abc_samples.jsonl", None), "every-eval-ever", tmp_path / "out")
    assert result.results_file.parent.name == "abc_samples"


def test_a_bad_name_flag_is_named_as_the_flag(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"model name '\.\.' \(from --name\)"):
        import_run(_nemo(tmp_path / "m", "fine"), "nemo", tmp_path / "out", name="..")


def test_an_inspect_eval_model_is_named_as_the_origin(tmp_path: Path) -> None:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.scorer import Score

    spec = EvalSpec(created="2026-11-29T08:00:00+00:00", task="arith", dataset=EvalDataset(name="arith", samples=2),
                    model="..", config=EvalConfig(epochs=1))
    samples = [EvalSample(id=f"q{i}", epoch=1, input="1+1?", target="2", scores={"m": Score(value="C")})
               for i in range(2)]
    log = tmp_path / "run.eval"
    write_eval_log(EvalLog(eval=spec, samples=samples, status="success"), str(log))
    with pytest.raises(InputError, match=r"\(from eval\.model in .*run\.eval\)"):
        import_run(log, "inspect", tmp_path / "out")
    assert not (tmp_path / "out").exists()
