"""`captrack ingest`: lm-eval output into the DuckDB store, idempotent and atomic."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest
from fakeruns import FakeTask, write_run

import captrack.results.ingest_sql as ingest_sql_module
import captrack.results.store as store_module
from captrack.cli import main
from captrack.labels import VariantLabels
from captrack.results.ingest_sql import DEFAULT_OBJECT_SIZE, read_windows
from captrack.results.runfiles import discover_runs
from captrack.results.store import SAMPLE_COLUMNS, IngestResult, Store

TASK = "captrack_probe_c1_facts"


def _ingest(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        status = main(["ingest", *args])
    return status, buffer.getvalue().replace("\n", " ")


def _rows(store: Path) -> list[tuple]:
    with duckdb.connect(str(store), read_only=True) as con:
        return con.execute("SELECT model, doc_id, metric, value, n_choices FROM samples ORDER BY ALL").fetchall()


def test_tidy_rows_with_separate_keys(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [1, 0, None], "acc_norm": [True, False, True]})])
    store = tmp_path / "s.duckdb"
    status, _ = _ingest(str(tmp_path / "run"), "--store", str(store), "--algorithm", "SFT", "--family", "smollm2")
    assert status == 0
    with duckdb.connect(str(store), read_only=True) as con:
        cols = [r[0] for r in con.execute("DESCRIBE samples").fetchall()]
        algo = con.execute("SELECT DISTINCT algorithm, family, task_version, filter FROM samples").fetchall()
    assert tuple(cols) == SAMPLE_COLUMNS
    assert algo == [("SFT", "smollm2", "1.0", "none")]
    rows = _rows(store)
    assert len(rows) == 6
    by_key = {(r[1], r[2]): r[3] for r in rows}
    assert by_key[(0, "acc")] == 1.0 and by_key[(1, "acc_norm")] == 0.0 and by_key[(2, "acc_norm")] == 1.0
    assert math.isnan(by_key[(2, "acc")])  # unscored is NaN, never 0
    assert {r[4] for r in rows} == {4}


def test_the_dataset_revision_of_each_doc_is_stored(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [1, 0]}, revision="local-b1-abc"),
                                         FakeTask("captrack_probe_c2_logic", {"acc": [1, 1]})])
    store = tmp_path / "s.duckdb"
    assert _ingest(str(tmp_path / "run"), "--store", str(store))[0] == 0
    with duckdb.connect(str(store), read_only=True) as con:
        found = dict(con.execute("SELECT task, any_value(dataset_revision) FROM samples GROUP BY task").fetchall())
    assert found == {TASK: "local-b1-abc", "captrack_probe_c2_logic": None}


def test_reingest_is_idempotent(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [1, 0, 1]})])
    store = tmp_path / "s.duckdb"
    for _ in range(2):
        assert _ingest(str(tmp_path / "run"), "--store", str(store))[0] == 0
    assert len(_rows(store)) == 3


def test_truncated_samples_file_names_file_and_line_and_changes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    write_run(tmp_path / "good", "good", [FakeTask(TASK, {"acc": [1, 1, 1]})])
    assert _ingest(str(tmp_path / "good"), "--store", str(store))[0] == 0
    before = _rows(store)

    write_run(tmp_path / "bad", "bad", [FakeTask(TASK, {"acc": [1, 0, 1, 0]})])
    samples = next((tmp_path / "bad").rglob("samples_*.jsonl"))
    text = samples.read_text()
    samples.write_text(text[: len(text) - 40])  # cut the last line mid-record
    status, message = _ingest(str(tmp_path / "good"), str(tmp_path / "bad"), "--store", str(store))
    assert status == 1
    assert samples.name in message and "line 4" in message
    assert _rows(store) == before


def test_lines_missing_at_the_end_are_caught(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "m", [FakeTask(TASK, {"acc": [1, 0, 1, 0]})])
    samples = next((tmp_path / "run").rglob("samples_*.jsonl"))
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:2]))
    status, message = _ingest(str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb"))
    assert status == 1 and "truncated" in message and "reports 4 docs" in message


def test_run_without_samples_says_log_samples(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "m", [FakeTask(TASK, {"acc": [1]})])
    next((tmp_path / "run").rglob("samples_*.jsonl")).unlink()
    status, message = _ingest(str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb"))
    assert status == 1 and "--log_samples" in message and TASK in message


def test_folder_without_results(tmp_path: Path) -> None:
    status, message = _ingest(str(tmp_path), "--store", str(tmp_path / "s.duckdb"))
    assert status == 1 and "no lm-eval results_*.json" in message


@pytest.mark.parametrize("value", ["True", "false", "0.5"])
def test_string_encoded_values_are_parsed(tmp_path: Path, value: str) -> None:
    write_run(tmp_path / "run", "m", [FakeTask(TASK, {"acc": [value]})])  # type: ignore[list-item]
    assert _ingest(str(tmp_path / "run"), "--store", str(tmp_path / "s.duckdb"))[0] == 0
    got = _rows(tmp_path / "s.duckdb")[0][3]
    assert got == {"True": 1.0, "false": 0.0, "0.5": 0.5}[value]


def _rewrite_lines(path: Path, change: Callable[[dict], None]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        change(line)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_option_loglikelihoods_logged_as_bare_numbers_are_read_too(tmp_path: Path) -> None:
    """The typed read expects lm-eval's [[loglikelihood, is_greedy], ...]; a file logged otherwise is read the general
    way (the whole ingest once more), with the same numbers, and each run is reported once."""
    lls = {0: [-1.5, -0.25, -3.0, -2.0], 1: [-0.5, -1.0, -1.5, -2.5]}
    run = write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [0, 1]}, choice_lls=lls),
                                               FakeTask("captrack_probe_c2_logic", {"acc": [1, 0]}, choice_lls=lls)])
    samples = run.parent / f"samples_{TASK}_{run.stem.removeprefix('results_')}.jsonl"
    _rewrite_lines(samples, lambda line: line.update(filtered_resps=[float(pair[0]) for pair in line["filtered_resps"]]))
    reported: list[IngestResult] = []
    with Store(tmp_path / "s.duckdb") as store:
        (result,) = store.ingest(discover_runs(run), VariantLabels(name="base"), progress=reported.append)
        stored = store.con.execute("SELECT task, doc_id, choice_ll FROM samples ORDER BY task, doc_id").fetchall()
    assert reported == [result] and result.rows == 4
    assert stored == [("captrack_probe_c1_facts", 0, lls[0]), ("captrack_probe_c1_facts", 1, lls[1]),
                      ("captrack_probe_c2_logic", 0, lls[0]), ("captrack_probe_c2_logic", 1, lls[1])]


def test_a_line_longer_than_duckdbs_default_buffer_is_read(tmp_path: Path) -> None:
    """Samples files are read with DuckDB's 16 MiB line buffer first; a longer line (a long-context prompt) makes
    the ingest read again with a 1 GiB one instead of failing."""
    run = write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [1, 0, 1]})])
    samples = run.parent / f"samples_{TASK}_{run.stem.removeprefix('results_')}.jsonl"
    long_prompt = "x" * (DEFAULT_OBJECT_SIZE + 1024)
    _rewrite_lines(samples, lambda line: line["arguments"]["gen_args_0"].update(arg_0=long_prompt) if line["doc_id"] == 1 else None)
    with Store(tmp_path / "s.duckdb") as store:
        (result,) = store.ingest(discover_runs(run), VariantLabels(name="base"))
    assert result.rows == 3


def test_after_a_large_ingest_duckdbs_memory_limit_is_back_and_the_store_goes_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The eviction itself shows only in RSS (bench_analysis.py at 10M: 1.9 -> 1.06 GB); this checks what it must not break.
    monkeypatch.setattr(store_module, "INGEST_EVICT_ROWS", 3)  # every run here is "large"
    write_run(tmp_path / "a", "a", [FakeTask(TASK, {"acc": [1, 0, 1]})])
    write_run(tmp_path / "b", "b", [FakeTask(TASK, {"acc": [0, 0, 1]})])
    with Store(tmp_path / "store.duckdb") as store:
        store.use_threads(1)
        limit = store.con.execute("SELECT current_setting('memory_limit')").fetchone()
        store.ingest(discover_runs(tmp_path / "a"), VariantLabels(name="a"))
        assert store.con.execute("SELECT current_setting('memory_limit')").fetchone() == limit  # lowered, then put back
        store.ingest(discover_runs(tmp_path / "b"), VariantLabels(name="b"))
        assert store.con.execute("SELECT current_setting('threads')").fetchone() == (1,)
        assert store.models() == ["a", "b"]
    rows = [(model, doc, value) for model, doc, _, value, _ in _rows(tmp_path / "store.duckdb")]
    assert rows == [("a", 0, 1.0), ("a", 1, 0.0), ("a", 2, 1.0), ("b", 0, 0.0), ("b", 1, 0.0), ("b", 2, 1.0)]


def test_a_run_read_a_window_of_files_at_a_time_stores_what_one_read_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 44: a run's files are INSERTed (and fingerprinted) a window at a time, so the fingerprint thread reads
    # what DuckDB reads while it is in the page cache; the windows must not change a row or a fingerprint.
    tasks = [FakeTask(name, {"acc": [1, 0, 1, 0]}) for name in (TASK, "captrack_probe_c2_logic", "captrack_boolq_subset")]
    write_run(tmp_path / "run", "m", tasks)
    stored = []
    for window in (ingest_sql_module.READ_WINDOW_BYTES, 1):
        monkeypatch.setattr(ingest_sql_module, "READ_WINDOW_BYTES", window)
        runs = discover_runs(tmp_path / "run")
        assert len(read_windows(list(runs[0].tasks))) == (1 if window > 1 else 3)
        with Store(tmp_path / f"store-{window}.duckdb") as store:
            store.ingest(runs, VariantLabels(name="m"))
            stored.append((store.con.execute("SELECT * FROM samples ORDER BY ALL").fetchall(),
                           store.con.execute("SELECT * FROM run_tasks ORDER BY ALL").fetchall()))
    assert stored[0] == stored[1] and len(stored[0][0]) == 12
    assert all(str(digest).startswith("xxh3_128:") for *_, digest in stored[1][1])


def test_the_thread_limit_outlives_a_release_of_memory(tmp_path: Path) -> None:
    write_run(tmp_path / "run", "m", [FakeTask(TASK, {"acc": [1, 0, 1]})])
    with Store(tmp_path / "store.duckdb") as store:
        store.ingest(discover_runs(tmp_path / "run"), VariantLabels(name="m"))
    with Store(tmp_path / "store.duckdb", read_only=True) as store:
        store.use_threads(1)  # a compare worker's share of the cores
        store.release_memory()  # compare hands DuckDB's memory back after each read
        assert store.con.execute("SELECT current_setting('threads')").fetchone() == (1,)
        assert store.models() == ["m"]
