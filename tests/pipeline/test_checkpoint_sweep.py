"""Replay of a finished training: a manifest variant naming `checkpoints:` is evaluated at every saved
checkpoint and gives the same per-step numbers as CapTrackCallback logged during that training; a glob
matching nothing, a checkpoint without weights and checkpoints on the base are refused before any work."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tinymodel import build_tiny_model

from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import run_experiment
from captrack.training.problems import arithmetic_sft_rows

TASK = "captrack_probe_c1_facts"


def _manifest(tmp_path: Path, base: Path, checkpoints: str, base_extra: str = "") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: 6\nbatch_size: 8\n"
        f"base: {{name: base, model_args: {{pretrained: {base}}}{base_extra}}}\n"
        f"variants:\n  - {{name: sft, algorithm: SFT, checkpoints: {checkpoints}}}\n"
    )
    return path


def test_bad_checkpoints_are_refused_naming_them_before_any_work(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    with pytest.raises(InputError, match=r"variant 'sft': checkpoints: .*out/checkpoint-\*' matches no checkpoint folder"):
        load_experiment(_manifest(tmp_path, base, '"out/checkpoint-*"'))
    empty = tmp_path / "out" / "checkpoint-4"
    empty.mkdir(parents=True)
    (empty / "trainer_state.json").write_text('{"global_step": 4}')
    with pytest.raises(InputError, match=r"checkpoint .*checkpoint-4 holds no model weights"):
        load_experiment(_manifest(tmp_path, base, '"out/checkpoint-*"'))
    good = tmp_path / "good" / "checkpoint-2"
    good.mkdir(parents=True)
    (good / "model.safetensors").write_bytes(b"")
    with pytest.raises(InputError, match=r"base 'base' gives checkpoints"):
        load_experiment(_manifest(tmp_path, base, '"good/checkpoint-*"', base_extra=', checkpoints: "good/checkpoint-*"'))
    assert [s for s, _ in load_experiment(_manifest(tmp_path, base, '"good/checkpoint-*"')).variants[0].steps] == [2]
    assert not (tmp_path / "work").exists()


def _train_with_callback(base: Path, out: Path) -> Any:
    """SFT of the tiny model for 4 steps saving checkpoint-2 and checkpoint-4, CapTrackCallback evaluating on save."""
    import datasets
    from trl import SFTConfig, SFTTrainer

    from captrack.training import CapTrackCallback
    from captrack.training.harness import load_base, trainer_args

    tokenizer, model = load_base(base, 0)
    rows = [{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in arithmetic_sft_rows(8, seed=0)]
    args = SFTConfig(**{**trainer_args(out, 4, 0, 1e-3, 2), "output_dir": str(out), "save_strategy": "steps",
                        "save_steps": 2}, max_length=128, completion_only_loss=True, packing=False)
    trainer = SFTTrainer(model=model, args=args, train_dataset=datasets.Dataset.from_list(rows), processing_class=tokenizer)
    callback = CapTrackCallback(trainer, tasks=[TASK], limit=6, on_save=True, output_dir=str(out / "captrack"))
    trainer.add_callback(callback)
    trainer.train()
    return callback


def test_replay_gives_the_curves_the_callback_logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    texts = [m["content"] for row in arithmetic_sft_rows(200, seed=99) for m in row["messages"]]
    base = build_tiny_model(tmp_path / "tiny", texts)
    callback = _train_with_callback(base, tmp_path / "train")
    assert sorted(callback.evaluated) == [2, 4]
    experiment = load_experiment(_manifest(tmp_path, base, '"train/checkpoint-*"'))
    assert [step for step, _ in experiment.variants[0].steps] == [2, 4]
    timings = run_experiment(experiment)
    assert {"evaluate sft at step 2 (seed 0)", "evaluate sft at step 4 (seed 0)"} <= set(timings)
    # The board holds curves.csv; each step's capability numbers are what the callback logged.
    curves = pd.read_csv(tmp_path / "board" / "curves.csv")
    caps = curves[curves["level"] == "capability"]
    for step in (2, 4):
        logged = callback.logged[step]
        rows = caps[caps["step"] == step].set_index("key")
        assert logged and set(rows.index) == {k.split("/")[1] for k in logged}
        for name, value in logged.items():
            _, key, measure = name.split("/")
            column = "drift_pct" if measure == "drift" else measure
            assert math.isclose(rows.loc[key, column], value, rel_tol=1e-9, abs_tol=1e-12), name
    page = (tmp_path / "board" / "index.html").read_text()
    assert 'id="over-training"' in page and "drift_over_training.svg" in page and "over-training-table" in page
    assert (tmp_path / "board" / "figures" / "rates_over_training.png").is_file()
    _check_step_links(tmp_path / "board", caps)
    assert "## Over training" in (tmp_path / "board" / "README.md").read_text()
    assert run_experiment(load_experiment(_manifest(tmp_path, base, '"train/checkpoint-*"'))) == {}  # all reused


def _check_step_links(board: Path, caps: pd.DataFrame) -> None:
    """Every point (drawn where the change in points is defined: a base score of 0 leaves relative drift undefined,
    not the change) links to its list on the steps page, which holds
    step_flips.csv's items; the flip counts under the figure link there too."""
    import re

    svg = (board / "figures" / "drift_over_training.svg").read_text()
    drawn = re.findall(r'<a xlink:href="\.\./steps\.html#([^"]+)" target="_top">', svg)
    assert sorted(drawn) == sorted(f"flips-sft-{int(r.step)}-{r.key}" for r in caps.dropna(subset=["oriented_change"]).itertuples())
    links = [f"flips-sft-{int(r.step)}-{r.key}" for r in caps.itertuples()]
    steps = (board / "steps.html").read_text()
    flips = pd.read_csv(board / "step_flips.csv")
    for anchor in links:
        _, _, step, key = anchor.split("-")
        section = steps.split(f'id="{anchor}"', 1)[1].split("<h2", 1)[0]
        listed = flips[(flips["step"] == int(step)) & (flips["capability"] == key)]
        assert f": {len(listed)} flipped since" in section
        assert all(str(h)[:12] in section for h in listed["doc_hash"])
    churn = pd.read_csv(board / "curve_items.csv")
    assert f"Items that flip-flopped over training ({len(churn)})" in steps
    index = (board / "index.html").read_text()
    assert 'id="flips-per-step-table"' in index and all(f'steps.html#{a}"' in index for a in links)


def test_a_variant_trained_with_save_steps_is_a_trajectory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from safetensors.torch import load_file

    monkeypatch.setenv("CAPTRACK_WORKERS", "1")
    texts = [m["content"] for row in arithmetic_sft_rows(200, seed=99) for m in row["messages"]]
    base = build_tiny_model(tmp_path / "tiny", texts)
    path = tmp_path / "exp.yaml"
    path.write_text(
        f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: 6\nbatch_size: 8\n"
        f"base: {{name: base, model_args: {{pretrained: {base}}}}}\nvariants:\n"
        "  - {name: sft, algorithm: SFT, train: {method: sft, steps: 4, rows: 8, batch_size: 2, max_length: 128,"
        " learning_rate: 1.0e-3, save_steps: 2}}\n")
    experiment = load_experiment(path)
    assert [s for s, _ in experiment.variants[0].steps] == [2, 4]
    timings = run_experiment(experiment)
    assert {"train sft (sft, 4 steps)", "evaluate sft at step 2 (seed 0)", "evaluate sft at step 4 (seed 0)"} <= set(timings)
    models = tmp_path / "work" / "models" / "sft"
    final, last = load_file(str(models / "model.safetensors")), load_file(str(models / "checkpoints" / "checkpoint-4" / "model.safetensors"))
    assert final.keys() == last.keys() and all((final[k] == last[k]).all() for k in final)  # the last step is the end point
    curves = pd.read_csv(tmp_path / "board" / "curves.csv")
    assert sorted(set(curves["step"])) == [2, 4]
    path.write_text(path.read_text().replace("save_steps: 2", "save_steps: 3"))
    with pytest.raises(InputError, match=r"variant 'sft': train.save_steps is 3; .* divides train.steps \(4\)"):
        load_experiment(path)


def test_the_curves_demo_evaluates_every_fourth_step_of_each_training() -> None:
    experiment = load_experiment(Path(__file__).parents[2] / "leaderboards" / "curves" / "experiment.yaml")
    assert {v.labels.algorithm: [s for s, _ in v.steps] for v in experiment.variants} == {
        "SFT": [4, 8, 12, 16], "DPO": [4, 8, 12, 16], "RL": [4, 8, 12, 16]}
    assert all(str(path).endswith(f"models/{v.name}/checkpoints/checkpoint-{s}") for v in experiment.variants
               for s, path in v.steps)
