"""The A/A floor (issue 54): `floor: {batch_sizes: [1, 16]}` evaluates the base twice by its own backend, apart only
in batch size, as a pair of its own; transitions.csv's rows of that pair are the flips the backend's batching alone
makes, and they must equal a count made here from the two runs' per-sample files."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest
from flipcount import flips, run_outcomes
from rich.console import Console
from tinymodel import build_tiny_model

from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment
from captrack.pipeline.runner import run_experiment

TASK = "captrack_probe_c1_facts"


def _manifest(tmp_path: Path, weights: Path, floor: str, base: str = "base") -> Path:
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [{TASK}]\nlimit: 12\nbatch_size: 8\n"
                    f"base: {{name: {base}, model_args: {{pretrained: {weights}}}, family: tiny}}\n"
                    f"variants:\n  - {{name: v, model_args: {{pretrained: {weights}}}, algorithm: SFT}}\n{floor}\n")
    return path


def test_floor_adds_the_base_twice_as_a_pair_of_its_own(tmp_path: Path) -> None:
    experiment = load_experiment(_manifest(tmp_path, tmp_path, "floor: {batch_sizes: [1, 16]}"))
    first, second = experiment.other_bases[-1], experiment.variants[-1]
    assert (first.name, first.batch_size, second.name, second.batch_size) == ("base-floor-bs1", 1, "base-floor-bs16", 16)
    assert experiment.base_of(second) == "base-floor-bs1" and second.labels.algorithm == "floor"
    assert first.model_args == second.model_args == experiment.base.model_args and second.labels.family == "tiny"
    assert experiment.base_of(experiment.variants[0]) == "base"  # the variants are still compared with the base


@pytest.mark.parametrize(("floor", "said"), [
    ("floor: {batch_sizes: [8, 8]}", "give two different batch sizes"),
    ("floor: {batch_sizes: [1]}", "floor"),
])
def test_a_floor_that_cannot_differ_is_refused(tmp_path: Path, floor: str, said: str) -> None:
    with pytest.raises(InputError, match=said):
        load_experiment(_manifest(tmp_path, tmp_path, floor))


def test_a_floor_alone_needs_no_variant_and_no_variant_without_a_floor_is_refused(tmp_path: Path) -> None:
    path = _manifest(tmp_path, tmp_path, "floor: {batch_sizes: [8, 16]}")
    text = path.read_text()
    path.write_text(text[:text.index("variants:")] + "variants: []\n" + text[text.index("floor:"):])
    assert [c.name for c in load_experiment(path).checkpoints] == ["base", "base-floor-bs16"]
    path.write_text(path.read_text().replace("floor: {batch_sizes: [8, 16]}", ""))
    with pytest.raises(InputError, match=r"key 'variants' is an empty list: list the checkpoints .* floor: \{batch_sizes"):
        load_experiment(path)


def test_a_floor_name_taken_by_a_checkpoint_is_refused(tmp_path: Path) -> None:
    path = _manifest(tmp_path, tmp_path, "floor: {batch_sizes: [1, 16]}")
    path.write_text(path.read_text().replace("name: v,", "name: base-floor-bs16,"))
    with pytest.raises(InputError, match="'base-floor-bs16' is already a checkpoint's name"):
        load_experiment(path)


def test_a_floor_at_the_experiments_batch_size_reuses_the_base(tmp_path: Path) -> None:
    path = _manifest(tmp_path, tmp_path, "floor: {batch_sizes: [8, 1]}")  # the experiment's batch_size is 8
    experiment = load_experiment(path)
    assert [c.name for c in experiment.checkpoints] == ["base", "v", "base-floor-bs1"]
    assert experiment.base_of(experiment.variants[-1]) == "base" and experiment.variants[-1].batch_size == 1


@pytest.mark.slow  # three evaluations of a tiny model and a board: 1-5 minutes on the loaded 2-core machine
def test_the_floor_row_is_the_flips_between_the_two_runs(tmp_path: Path) -> None:
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    weights = build_tiny_model(tmp_path / "m", texts, seed=0)
    manifest = _manifest(tmp_path, weights, "floor: {batch_sizes: [8, 1]}\nexecutor: {name: local, workers: 1}")
    run_experiment(load_experiment(manifest), console=Console(file=io.StringIO()))
    work = load_experiment(manifest).work
    (bs_a, first), (bs_b, second) = (run_outcomes(work.run(name, 0), TASK, "acc") for name in ("base", "base-floor-bs1"))
    assert (bs_a, bs_b, len(first)) == (8, 1, 12)
    n, lost, gained = flips(first, second)
    rows = pd.read_csv(tmp_path / "board" / "transitions.csv")
    floor = rows[(rows["variant"] == "base-floor-bs1") & (rows["task"] == TASK) & (rows["metric"] == "acc")]
    assert len(floor) == 1
    row = floor.iloc[0]
    assert (int(row["n"]), row["forgetting"], row["backward_transfer"]) == (n, pytest.approx(lost), pytest.approx(gained))
