"""``serve: vllm`` on an experiment's checkpoint (issue 55): checked when the experiment is read, and carried into the
evaluation's stage job (whose worker then starts the server: captrack.pipeline.stage_job, captrack.lmeval.served)."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.errors import InputError
from captrack.pipeline import job_stages
from captrack.pipeline.experiment import load_experiment


def _manifest(tmp_path: Path, entry: str) -> Path:
    (tmp_path / "model").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: served\ntasks: [captrack_probe_w1_choice]\nlimit: 2\nbase: {entry}\n"
                    "variants:\n  - {name: v, model: hf, model_args: {pretrained: model}}\n")
    return path


def test_a_served_checkpoint_is_model_vllm_said_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_experiment(_manifest(tmp_path, "{name: b, model: hf, serve: vllm, model_args: {pretrained: model}}"))
    message = str(caught.value)
    assert "\n" not in message and "serve: vllm but model: hf" in message and "model: vllm" in message, message


def test_serve_names_a_server_captrack_can_start(tmp_path: Path) -> None:
    with pytest.raises(InputError) as caught:
        load_experiment(_manifest(tmp_path, "{name: b, model: vllm, serve: sglang, model_args: {pretrained: model}}"))
    assert "serve" in str(caught.value) and "vllm" in str(caught.value)


def test_a_served_checkpoint_s_job_asks_its_worker_to_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_stages, "stage_python", lambda model, python, where, in_container=False: "/vllm-env/bin/python")
    experiment = load_experiment(_manifest(tmp_path, "{name: b, model: vllm, serve: vllm, model_args: {pretrained: model}}"))
    assert experiment.base.serve == "vllm" and experiment.variants[0].serve == ""
    served = job_stages.eval_stage(experiment, experiment.base, 0, {}, None, tmp_path / "out")
    plain = job_stages.eval_stage(experiment, experiment.variants[0], 0, {}, None, tmp_path / "out2")
    assert served.job is not None and plain.job is not None
    job = served.job(1)
    assert job.args["serve"] == "vllm" and job.args["spec"]["model"] == "vllm" and job.python == "/vllm-env/bin/python"
    assert served.current_inputs()["serve"] == "vllm" and "serve" not in plain.current_inputs()  # serving or not is part of what the marker records (a change re-evaluates)
