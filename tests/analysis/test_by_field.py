"""`captrack compare --by FIELD`: transitions and drift per value of a doc field, in by_<field>.csv."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.by_field import group_table
from captrack.cli import main
from captrack.labels import VariantLabels

# Six questions: the official rows keep `category` inside a JSON `meta`; `level` sits at the top level.
CATEGORIES = ["law", "law", "law", "math", "math", "math"]
DOCS = {i: {"id": f"q{i}", "level": "easy" if i < 2 else "hard", "meta": json.dumps({"category": c, "question_id": i})}
        for i, c in enumerate(CATEGORIES)}
BASE = [1, 1, 0, 1, 0, 0]     # law: 1 1 0   math: 1 0 0
VARIANT = [0, 1, 1, 1, 1, 1]  # law: 0 1 1   math: 1 1 1


def _runs(tmp_path: Path) -> tuple[Path, Path]:
    def run(name: str, acc: list[int]) -> Path:
        task = FakeTask("captrack_mmlu_pro_full", {"acc": acc}, output_type="generate_until", docs=DOCS)
        write_run(tmp_path / name, name, [task])
        return tmp_path / name

    return run("base", BASE), run("tuned", VARIANT)


def _by(out: Path, field: str) -> pd.DataFrame:
    return pd.read_csv(out / f"by_{field}.csv").set_index(field)


def test_folder_mode_splits_counts_by_a_field_kept_in_meta(tmp_path: Path) -> None:
    base, variant = _runs(tmp_path)
    assert main(["compare", "--base", str(base), "--variant", f"tuned={variant}:SFT", "--by", "category",
                 "--by", "level", "--out", str(tmp_path / "out"), "--bootstrap", "200"]) == 0
    table = _by(tmp_path / "out", "category")
    assert list(table.columns[:4]) == ["variant", "algorithm", "task", "metric"]
    law, math_ = table.loc["law"], table.loc["math"]
    assert (law.n, law.n_11, law.n_10, law.n_01, law.n_00) == (3, 1, 1, 1, 0)
    assert (math_.n, math_.n_11, math_.n_10, math_.n_01, math_.n_00) == (3, 1, 0, 2, 0)
    assert law.forgetting == pytest.approx(1 / 3) and math_.backward_transfer == pytest.approx(2 / 3)
    assert math_.base_value == pytest.approx(1 / 3) and math_.variant_value == pytest.approx(1.0)
    assert math_.delta == pytest.approx(2 / 3)
    assert math_.delta_ci_low <= math_.delta <= math_.delta_ci_high
    assert law.mcnemar_p == pytest.approx(1.0) and not np.isnan(law.q_value)
    # a top-level doc field works the same; the groups add up to the whole
    level = _by(tmp_path / "out", "level")
    assert level["n"].sum() == 6 and level.loc["easy", "n_10"] == 1
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "by_category.csv" in summary["files"]


def test_store_mode_gives_the_same_table(tmp_path: Path) -> None:
    base, variant = _runs(tmp_path)
    store = str(tmp_path / "store.duckdb")
    assert main(["ingest", str(base), "--store", store, "--name", "base"]) == 0
    assert main(["ingest", str(variant), "--store", store, "--name", "tuned"]) == 0
    assert main(["compare", "--store", store, "--base", "base", "--variant", "tuned", "--by", "category",
                 "--out", str(tmp_path / "s"), "--bootstrap", "200"]) == 0
    assert main(["compare", "--base", str(base), "--variant", f"tuned={variant}", "--by", "category",
                 "--out", str(tmp_path / "f"), "--bootstrap", "200"]) == 0
    pd.testing.assert_frame_equal(_by(tmp_path / "s", "category"), _by(tmp_path / "f", "category"))


def test_a_field_no_document_has_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, variant = _runs(tmp_path)
    assert main(["compare", "--base", str(base), "--variant", f"tuned={variant}", "--by", "subject",
                 "--out", str(tmp_path / "out")]) != 0
    assert "no compared document has a field 'subject'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_without_groups_one_row_per_task_with_the_delta_ci() -> None:
    items = pd.DataFrame({"task": "t", "metric": "acc", "doc_hash": [str(i) for i in range(6)], "occ": 1,
                          "base": np.array(BASE, dtype=float), "variant": np.array(VARIANT, dtype=float),
                          "n_choices": 10.0})
    (row,) = group_table(items, VariantLabels(name="v"), n_resamples=500).itertuples()
    assert (row.n_11, row.n_10, row.n_01, row.n_00, row.k) == (2, 1, 3, 0, 10)
    assert row.delta == pytest.approx(2 / 6)
    # chance adjustment with k = 10: E = (1 − 1/2)(1 − 5/6) / 9
    assert row.forgetting_adj == pytest.approx(max(1 / 6 - 0.5 * (1 / 6) / 9, 0))
