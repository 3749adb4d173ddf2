"""captrack.training.CapTrackCallback: evaluating during SFT, DPO and GRPO leaves the final weights bitwise as
they are without it, writes lm-eval run folders tagged with their step, and logs drift through the trainer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tinymodel import build_tiny_model

from captrack.training.preference import train_dpo
from captrack.training.problems import (
    arithmetic_preference_rows,
    arithmetic_prompt_rows,
    arithmetic_sft_rows,
)
from captrack.training.rl import train_rl
from captrack.training.sft import train_sft

TASK = "captrack_probe_c1_facts"  # option likelihoods: no generation, cheap on a tiny model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts = [m["content"] for row in arithmetic_sft_rows(200, seed=99) for m in row["messages"]]
    return build_tiny_model(tmp_path_factory.mktemp("tiny"), texts)


def _sft(base: Path, out: Path, callbacks: list[Any]) -> dict[str, Any]:
    # 4 rows in batches of 2 over 4 steps: two epochs, so the second epoch's shuffle draws after an evaluation.
    return train_sft(base, out, arithmetic_sft_rows(4, seed=0), steps=4, learning_rate=1e-3, batch_size=2,
                     max_length=128, callbacks=callbacks)


def _dpo(base: Path, out: Path, callbacks: list[Any]) -> dict[str, Any]:
    return train_dpo(base, out, arithmetic_preference_rows(4, seed=0), steps=4, learning_rate=1e-3, batch_size=2,
                     max_length=128, callbacks=callbacks)


def _grpo(base: Path, out: Path, callbacks: list[Any]) -> dict[str, Any]:
    # Sampled completions draw from torch's global RNG every step: an evaluation that moved it would show.
    return train_rl(base, out, arithmetic_prompt_rows(8, seed=0), steps=4, learning_rate=1e-3, batch_size=2,
                    num_generations=2, max_completion_length=8, callbacks=callbacks)


def _weights(folder: Path) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


@pytest.mark.parametrize("train", [_sft, _dpo, _grpo], ids=["SFTTrainer", "DPOTrainer", "GRPOTrainer"])
def test_training_with_the_callback_ends_at_the_same_weights(train: Callable[..., dict[str, Any]], tiny: Path,
                                                             tmp_path: Path) -> None:
    import torch

    from captrack.labels import VariantLabels
    from captrack.results.runfiles import discover_runs
    from captrack.results.store import Store
    from captrack.training import CapTrackCallback

    made: list[CapTrackCallback] = []

    def watch(trainer: Any) -> CapTrackCallback:
        made.append(CapTrackCallback(trainer, tasks=[TASK], every=2, limit=6, output_dir=str(tmp_path / "evals")))
        return made[-1]

    plain = train(tiny, tmp_path / "plain", [])
    watched = train(tiny, tmp_path / "watched", [watch])
    assert watched["losses"] == plain["losses"] and len(plain["losses"]) == 4  # the trainer's own logs all there
    before, after = _weights(tmp_path / "plain"), _weights(tmp_path / "watched")
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before), "the callback changed the trained weights"
    assert max(float((after[k] - _weights(tiny)[k]).abs().max()) for k in after) > 0  # it did train
    [callback] = made
    assert sorted(callback.evaluated) == [2, 4]
    assert set(callback.logged[2]) >= {"captrack/C1/forgetting_adj", "captrack/C1/backward_transfer_adj"}
    logged = [e for e in callback.trainer.state.log_history if "captrack/C1/forgetting_adj" in e]
    assert [e["step"] for e in logged] == [2, 4]  # what report_to's loggers were given, at the global step
    with Store() as store:  # an ordinary lm-eval run folder, its step read back by ingest
        store.ingest(discover_runs(callback.evaluated[4]), VariantLabels(name="sft"))
        assert [r["run_id"] for r in store.runs()] and store.con.execute("SELECT step FROM runs").fetchall() == [(4,)]
