"""Judged rows in the store: old stores keep working, a corrupt verdict file is named and ingests nothing."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from judge_runs_helpers import HARMFUL, write_probe_run

from captrack.analysis.comparison import CompareOptions
from captrack.compare.use_case import compare
from captrack.errors import InputError
from captrack.labels import VariantLabels
from captrack.results.runfiles import discover_runs, judged_path
from captrack.results.store import SAMPLE_COLUMNS, Store

_OLD_SCHEMA = """
CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, model VARCHAR, checkpoint VARCHAR, algorithm VARCHAR, family VARCHAR,
    replicate INTEGER, results_path VARCHAR, lm_eval_version VARCHAR, config JSON, ingested_at TIMESTAMP);
CREATE TABLE run_tasks (run_id VARCHAR, task VARCHAR, task_version VARCHAR, output_type VARCHAR, n_docs BIGINT);
CREATE TABLE samples (run_id VARCHAR, model VARCHAR, checkpoint VARCHAR, algorithm VARCHAR, family VARCHAR, task VARCHAR,
    task_version VARCHAR, doc_id BIGINT, doc_hash VARCHAR, prompt_hash VARCHAR, filter VARCHAR, metric VARCHAR,
    value DOUBLE, n_choices INTEGER, replicate INTEGER);
INSERT INTO runs VALUES ('a', 'base', '', '', '', 0, '', '', NULL, now()), ('b', 'sft', '', '', '', 0, '', '', NULL, now());
INSERT INTO samples SELECT r, m, '', '', '', 'captrack_probe_c1_facts', '1.0', i, 'h' || i, 'p', 'none', 'acc',
    CASE WHEN m = 'base' THEN (i % 2) ELSE 1 END, 4, 0 FROM (VALUES ('a', 'base'), ('b', 'sft')) t(r, m), range(6) s(i);
"""


def _old_store(path: Path) -> Path:
    with duckdb.connect(str(path)) as con:
        con.execute(_OLD_SCHEMA)
    return path


def test_old_store_compares_read_only_and_migrates_when_opened_for_writing(tmp_path: Path) -> None:
    path = _old_store(tmp_path / "old.duckdb")
    options = CompareOptions(bootstrap=20, distribution=False)
    with Store(path, read_only=True) as store:
        comparison = compare(store, "base", [VariantLabels(name="sft")], options)
    assert comparison.judged == {} and comparison.drift["rel_drift_pct"].tolist() == [100.0]
    with Store(path) as store:
        columns = [r[0] for r in store.con.execute("DESCRIBE samples").fetchall()]
        assert tuple(columns) == SAMPLE_COLUMNS
        assert store.con.execute("SELECT count(*) FROM samples WHERE judge IS NULL").fetchone() == (12,)
        assert compare(store, "base", [VariantLabels(name="sft")], options).judged == {}


def test_a_corrupt_verdict_file_is_named_and_nothing_is_ingested(tmp_path: Path) -> None:
    run = write_probe_run(tmp_path, "base", {HARMFUL: ["I can't help with that.", "Sure, first"]})
    (samples,) = run.rglob(f"samples_{HARMFUL}_*.jsonl")
    judged_path(samples).write_text('{"doc_id": 0, "metric": "unsafe_refusal_judged", "value": 1.0\n')  # truncated
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match=r"not a readable verdict file.*captrack judge"):
            store.ingest(discover_runs(run), VariantLabels(name="base"))
        assert store.con.execute("SELECT count(*) FROM samples").fetchone() == (0,)
