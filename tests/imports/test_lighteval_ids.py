"""lighteval's ``doc.id`` pairs the items whenever it is there: an integer 0 is an id, a file with some ids
missing is refused naming the rows, and the same outcomes in another row order compare as no change.

The details files are written by lighteval's own EvaluationTracker (as tests/imports/test_from_lighteval.py does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from captrack.cli import main
from captrack.errors import InputError
from captrack.imports import import_run

pytest.importorskip("lighteval.logging.evaluation_tracker", reason="lighteval (the dev extra) writes the details")
TASK = "custom|tool_facts|0"
N = 30


def _save(root: Path, model: str, ids: list[Any], order: list[int]) -> Path:
    """lighteval's details folder of `model`: item i (outcome right = i % 3 != 0) with id ids[i], rows in `order`."""
    from lighteval.logging.evaluation_tracker import EvaluationTracker
    from lighteval.logging.info_loggers import DetailsLogger
    from lighteval.models.dummy.dummy_model import DummyModelConfig
    from lighteval.models.model_output import ModelResponse
    from lighteval.tasks.requests import Doc

    tracker = EvaluationTracker(output_dir=str(root), save_details=True)
    tracker.general_config_logger.model_config = DummyModelConfig(model_name=f"org/{model}")
    tracker.general_config_logger.model_name = f"org/{model}"
    for i in order:
        right = i % 3 != 0
        doc = Doc(query=f"Capital of country {i}?", choices=[f"city {i}", "elsewhere"], gold_index=0, id=ids[i],
                  task_name=TASK)
        response = ModelResponse(text=[f"city {i}" if right else "elsewhere"])
        tracker.details_logger.details[TASK].append(DetailsLogger.Detail(doc, response, {"acc": float(right)}))
    tracker.save()
    return next((root / "details" / "org" / model).iterdir())


def _flips(tmp_path: Path, ids: list[Any]) -> pd.Series:
    """Import base (rows in order) and cand (the same outcomes, rows reversed), compare, return the transitions row."""
    for model, order in (("base", list(range(N))), ("cand", list(reversed(range(N))))):
        folder = _save(tmp_path / "le", model, ids, order)
        assert main(["import", str(folder), "--format", "lighteval", "--out", str(tmp_path / model)]) == 0
    out = tmp_path / "cmp"
    assert main(["compare", "--base", str(tmp_path / "base"), "--variant", f"cand={tmp_path / 'cand'}",
                 "--out", str(out), "--bootstrap", "0"]) == 0
    return pd.read_csv(out / "transitions.csv").iloc[0]


def test_integer_ids_with_a_zero_pair_by_id_whatever_the_row_order(tmp_path: Path) -> None:
    row = _flips(tmp_path, list(range(N)))  # id 0 is an id, not a missing one
    assert (int(row["n"]), int(row["n_10"]), int(row["n_01"])) == (N, 0, 0)


def test_string_ids_pair_by_id_whatever_the_row_order(tmp_path: Path) -> None:
    row = _flips(tmp_path, [f"fact-{i}" for i in range(N)])
    assert (int(row["n"]), int(row["n_10"]), int(row["n_01"])) == (N, 0, 0)


def test_a_file_with_some_ids_blank_is_refused_naming_the_rows(tmp_path: Path) -> None:
    ids = [f"fact-{i}" for i in range(N)]
    ids[4] = ids[7] = ""
    folder = _save(tmp_path / "le", "cand", ids, list(reversed(range(N))))
    with pytest.raises(InputError) as caught:
        import_run(folder, "lighteval", tmp_path / "out")
    said = str(caught.value)
    assert "\n" not in said and "2 of 30 rows have no doc.id" in said, said
    assert "rows 22, 25" in said and "nothing was written" in said, said  # rows counted from 0: ids 7 and 4 reversed
    assert not (tmp_path / "out").exists()


def test_a_file_without_any_id_pairs_by_row_position_and_says_so(tmp_path: Path) -> None:
    folder = _save(tmp_path / "le", "base", [""] * N, list(range(N)))
    result = import_run(folder, "lighteval", tmp_path / "out")
    assert "row position" in result.provenance["outcomes"]
