"""Stores written before judged metrics existed keep working, read-only or migrated on write."""

from __future__ import annotations

from pathlib import Path

import duckdb

from captrack.analysis.compare import CompareOptions, VariantSpec, compare_store
from captrack.store import SAMPLE_COLUMNS, Store

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
        comparison = compare_store(store, "base", [VariantSpec("sft")], options)
    assert comparison.judged == {} and comparison.drift["rel_drift_pct"].tolist() == [100.0]
    with Store(path) as store:
        columns = [r[0] for r in store.con.execute("DESCRIBE samples").fetchall()]
        assert tuple(columns) == SAMPLE_COLUMNS
        assert store.con.execute("SELECT count(*) FROM samples WHERE judge IS NULL").fetchone() == (12,)
        assert compare_store(store, "base", [VariantSpec("sft")], options).judged == {}
