"""``serve: {server: vllm, parallel: N}`` (issue 55): N lm-eval processes against one server, carried into the stage
job's arguments; a value out of range refused in one line when the experiment is read. That N processes write what one
writes is tests/lmeval/test_served_record.py's."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.errors import InputError
from captrack.pipeline import job_stages
from captrack.pipeline.experiment import load_experiment


def _manifest(tmp_path: Path, serve: str) -> Path:
    (tmp_path / "model").mkdir(parents=True, exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: served\ntasks: [captrack_probe_w1_choice]\nlimit: 2\n"
                    f"base: {{name: b, model: vllm, serve: {serve}, model_args: {{pretrained: model}}}}\n"
                    "variants:\n  - {name: v, model: hf, model_args: {pretrained: model}}\n")
    return path


def test_parallel_on_serve_reaches_the_job_and_leaves_the_stage_s_identity_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_stages, "stage_python", lambda model, python, where, in_container=False: "/vllm-env/bin/python")
    four = load_experiment(_manifest(tmp_path / "a", "{server: vllm, parallel: 4}"))
    plain = load_experiment(_manifest(tmp_path / "b", "vllm"))
    assert (four.base.serve, four.base.serve_parallel) == ("vllm", 4) and plain.base.serve_parallel == 1
    stage = job_stages.eval_stage(four, four.base, 0, {}, None, tmp_path / "out")
    plain_stage = job_stages.eval_stage(plain, plain.base, 0, {}, None, tmp_path / "out")
    assert stage.job is not None and plain_stage.job is not None
    assert stage.job(1).args["serve"] == "vllm" and stage.job(1).args["parallel"] == 4
    assert "parallel" not in plain_stage.job(1).args
    assert stage.current_inputs()["serve"] == plain_stage.current_inputs()["serve"] == "vllm"  # same answers


@pytest.mark.parametrize("serve", ["{server: vllm, parallel: 0}", "{server: sglang}", "{server: vllm, paralel: 2}"])
def test_bad_serve_options_are_one_line(tmp_path: Path, serve: str) -> None:
    with pytest.raises(InputError) as caught:
        load_experiment(_manifest(tmp_path, serve))
    message = str(caught.value)
    assert "\n" not in message and "serve" in message, message
