"""Offline preparation (issue 55): with the hub offline (HF_HUB_OFFLINE=1, which the jobs inherit), a run whose jobs
would fetch a model by its hub id or an official task's data is refused before anything is submitted, in one line
naming each and ``--prepare``; once the model is in the Hugging Face cache (what ``--prepare`` fetches) the same run
passes, and ``--prepare`` itself finds nothing left. The hub cache is a real one (huggingface_hub's layout) in tmp_path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.cli import main

REPO = "captrack-test/tiny-llama"


@pytest.fixture
def offline_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hugging Face cache of this test, the hub offline (as HF_HUB_OFFLINE=1 sets it)."""
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    return cache


def _experiment(tmp_path: Path, tasks: str) -> Path:
    (tmp_path / "local").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: offline\ntasks: {tasks}\nlimit: 2\nworkdir: work\nexecutor: {{name: slurm}}\n"
                    f"base: {{name: b, model: hf, model_args: {{pretrained: {REPO}}}}}\n"
                    "variants:\n  - {name: v, model: hf, model_args: {pretrained: local}}\n")
    return path


def _cache_repo(cache: Path) -> None:
    """A snapshot of REPO (its config) in huggingface_hub's cache layout, as a download leaves it."""
    repo = cache / f"models--{REPO.replace('/', '--')}"
    snapshot = repo / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text('{"model_type": "llama"}')
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(snapshot.name)


def test_an_unprepared_offline_run_is_refused_before_submission_naming_what_to_prepare(
        tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture[str]) -> None:
    experiment = _experiment(tmp_path, "[captrack_probe_w1_choice, captrack_boolq_subset]")
    assert main(["run", str(experiment)]) == 1
    message = capsys.readouterr().err.strip()
    assert "\n" not in message, message
    assert f"model {REPO!r} of checkpoint 'b'" in message and "captrack_boolq_subset" in message, message
    assert "--prepare" in message and "nothing was submitted" in message
    assert "local" not in message.split("would need", 1)[1].split("run `", 1)[0]  # a local folder needs nothing
    assert not (tmp_path / "work" / "jobs").exists()


def test_a_prepared_offline_run_passes_and_prepare_finds_nothing_left(
        tmp_path: Path, offline_hub: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.prepare import check_prepared, missing_offline

    experiment = _experiment(tmp_path, "[captrack_probe_w1_choice]")
    assert missing_offline(load_experiment(experiment)) == [f"model {REPO!r} of checkpoint 'b' (not in the Hugging "
                                                            "Face cache)"]
    _cache_repo(offline_hub)
    check_prepared(load_experiment(experiment))  # no error: nothing left for the network
    assert main(["run", str(experiment), "--prepare"]) == 0
    out = capsys.readouterr().out
    assert f"prepared: model {REPO} (b)" in out and "captrack_probe_w1_choice" in out and "need no network" in out


def test_a_folder_that_is_not_there_is_no_hub_model() -> None:
    # Offline, a checkpoint naming a missing folder was refused as an unprepared hub model (before the executor's own
    # refusals): a path is never a repository id; the model's own error names it when it is loaded.
    from captrack.pipeline.prepare import _is_repo_id

    assert [_is_repo_id(v) for v in ("/nonexistent/model", "./model", "~/model", "a/b/c")] == [False] * 4
    assert [_is_repo_id(v) for v in ("HuggingFaceTB/SmolLM2-135M-Instruct", "gpt2")] == [True, True]


def test_a_checkpoint_named_by_a_hub_id_is_planned_not_refused(tmp_path: Path, offline_hub: Path) -> None:
    """A lab names its checkpoints by hub ids: once in the cache, `captrack run` plans them (it refused every id as a
    missing folder), keeps the id for the jobs to load, and plans GPU memory from the cached config.json; a bare word
    that is neither a folder nor in the cache is still a missing folder, said at plan time."""
    from captrack.backends.memory_plan import load_config
    from captrack.errors import InputError
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.runner import validate

    experiment = _experiment(tmp_path, "[captrack_probe_w1_choice]")
    with pytest.raises(InputError):
        load_config(REPO)  # not cached yet: no config to plan from
    _cache_repo(offline_hub)
    (next(offline_hub.rglob("config.json"))).write_text(
        '{"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 512}')
    validate(load_experiment(experiment))  # no error
    assert load_config(REPO)["hidden_size"] == 64
    typo = tmp_path / "typo.yaml"
    typo.write_text(experiment.read_text().replace(REPO, "mymodle"))
    with pytest.raises(InputError, match="model path mymodle does not exist"):
        validate(load_experiment(typo))
