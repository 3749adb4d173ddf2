"""curves.csv's step verdicts carry capabilities.csv's corrections (issue 53, item 2): the covariance of forms of
the same source items (taxonomy shared_items) and `--cluster`. The last step of a trajectory is the end point, so
its rows equal capabilities.csv's and drift.csv's; an earlier step equals an end-point comparison of that
checkpoint alone."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.verdicts import combine_changes
from captrack.cli import main

FORMS = ("captrack_mmlu_pro_schema", "captrack_mmlu_pro_table_schema")  # two forms of the same mmlu_pro items (H2)
N = 200
STEPS = (10, 20)
DOCS = {i: {"question": f"source question {i}", "id": f"mmlu_pro-test-{i}", "grp": f"g{i % 25}"} for i in range(N)}
CHANGE = ("oriented_change", "change_ci_low", "change_ci_high")


def _outcomes(seed: int) -> dict[str, list[float]]:
    """Both forms' format_valid: an item's change is mostly shared by its two forms (so their changes covary)."""
    rng = np.random.default_rng(seed)
    base = (np.random.default_rng(0).random(N) < 0.6).astype(float)
    if seed == 0:
        return {form: base.tolist() for form in FORMS}
    swing = rng.random(N) < 0.25  # both forms of these items flip together
    out = {}
    for form in FORMS:
        own = rng.random(N) < 0.04
        out[form] = np.where(swing ^ own, 1.0 - base, base).tolist()
    return out


def _run(folder: Path, name: str, seed: int) -> None:
    outcomes = _outcomes(seed)
    write_run(folder, name, [FakeTask(f, {"format_valid": outcomes[f]}, output_type="generate_until", docs=DOCS)
                             for f in FORMS])


def _cli(*args: str) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    assert status == 0, buffer.getvalue()


def _compare(tmp_path: Path, name: str, variants: list[tuple[Path, list[str]]]) -> Path:
    store, out = tmp_path / f"{name}.duckdb", tmp_path / f"out-{name}"
    _cli("ingest", str(tmp_path / "base"), "--store", str(store), "--name", "base")
    for folder, extra in variants:
        _cli("ingest", str(folder), "--store", str(store), "--name", "sft", *extra)
    _cli("compare", "--store", str(store), "--base", "base", "--variant", "sft:SFT", "--out", str(out),
         "--bootstrap", "100", "--cluster", "grp")
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base and 'sft' at two steps, compared as a trajectory with --cluster (out-trajectory/)."""
    root = tmp_path_factory.mktemp("shared-forms")
    _run(root / "base", "base", 0)
    for seed, step in enumerate(STEPS, start=1):
        _run(root / f"sft{step}", f"sft-{step}", seed)
    _compare(root, "trajectory", [(root / f"sft{s}", ["--step", str(s)]) for s in STEPS])
    return root


def test_the_last_step_of_a_trajectory_with_shared_items_and_clusters_is_the_end_point(runs: Path) -> None:
    out = runs / "out-trajectory"
    curves = pd.read_csv(out / "curves.csv")
    caps = pd.read_csv(out / "capabilities.csv").set_index("key")
    last = curves[curves["step"] == STEPS[-1]].set_index("key")
    for key in ("H2", "HOW"):  # the capability and its group: source-matched covariance and clusters
        for column in CHANGE:
            assert np.isclose(last.loc[key, column], caps.loc[key, column], rtol=1e-12, atol=1e-12), (key, column)
        assert last.loc[key, "verdict"] == caps.loc[key, "verdict"]
    assert "cluster-robust" in caps.loc["H2", "change_method"]
    drift = pd.read_csv(out / "drift.csv").set_index("task")
    for column in ("ci_low", "ci_high", *CHANGE):  # each form's own rows: clusters widen them as drift.csv's
        assert np.allclose(last.loc[list(FORMS), column], drift.loc[list(FORMS), column], rtol=1e-12), column
    # The correction matters here: without the source ids the interval is another one.
    outcomes, base = _outcomes(len(STEPS)), _outcomes(0)
    plain = combine_changes([(f, np.array(base[f]), np.array(outcomes[f]), "binary", "higher") for f in FORMS], 5.0)
    assert not np.isclose(plain.ci95[0], caps.loc["H2", "change_ci_low"], atol=1e-3)


def test_an_earlier_step_is_the_end_point_comparison_of_that_checkpoint_alone(runs: Path) -> None:
    curves = pd.read_csv(runs / "out-trajectory" / "curves.csv")
    alone = pd.read_csv(_compare(runs, "alone", [(runs / f"sft{STEPS[0]}", [])]) / "capabilities.csv").set_index("key")
    first = curves[curves["step"] == STEPS[0]].set_index("key")
    for key in ("H2", "HOW"):
        for column in CHANGE:
            assert np.isclose(first.loc[key, column], alone.loc[key, column], rtol=1e-12, atol=1e-12), (key, column)
