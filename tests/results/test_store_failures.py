"""A damaged store, a DuckDB error, a step DuckDB cannot hold: one line naming the file, never a traceback;
a store with a damaged block is never written to (issue 40)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

FACTS = "captrack_probe_c1_facts"


def _one_line_error(capsys: pytest.CaptureFixture[str], *named: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "\nerror:" in "\n" + err, err
    err = err[err.index("error:") if err.startswith("error:") else err.index("\nerror:") + 1:]
    flat = " ".join(err.split())
    assert all(" ".join(name.split()) in flat for name in named), err
    return err


def _stored(tmp_path: Path, rows: int = 40) -> tuple[Path, Path]:
    run = tmp_path / "run"
    write_run(run, "m", [FakeTask(FACTS, {"acc": [i % 2 for i in range(rows)]})])
    store = tmp_path / "s.duckdb"
    assert main(["ingest", str(run), "--store", str(store), "--name", "m"]) == 0
    return run, store


def test_a_truncated_store_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, store = _stored(tmp_path)
    with store.open("r+b") as handle:
        handle.truncate(os.path.getsize(store) // 2)
    capsys.readouterr()
    assert main(["ingest", str(run), "--store", str(store), "--name", "m2"]) == 1
    _one_line_error(capsys, str(store))
    assert main(["compare", "--store", str(store), "--base", "m", "--variant", "m2", "--out", str(tmp_path / "o")]) == 1
    _one_line_error(capsys, str(store))


def test_ingest_into_a_store_with_a_zeroed_block_is_refused_before_writing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    write_run(run, "m", [FakeTask(FACTS, {"acc": [i % 2 for i in range(2000)]})])
    store = tmp_path / "s.duckdb"
    con = duckdb.connect(str(store))  # a store big enough that its data sits in blocks of its own
    con.execute("CREATE TABLE samples AS SELECT range AS doc_id, md5(range::VARCHAR) AS doc_hash FROM range(300000)")
    con.close()
    with store.open("r+b") as handle:  # zero the first data block (past the 3 header blocks)
        handle.seek(3 * 4096)
        handle.write(b"\0" * 262144)
    before = store.read_bytes()
    capsys.readouterr()
    assert main(["ingest", str(run), "--store", str(store), "--name", "m"]) == 1
    err = _one_line_error(capsys, str(store), "nothing was written")
    assert "ingested" not in err and store.read_bytes() == before


def test_a_duckdb_error_names_the_store(tmp_path: Path) -> None:
    from captrack.failures import failure_message
    from captrack.results.store import Store

    with pytest.raises(duckdb.Error) as caught, Store(tmp_path / "s.duckdb") as store:
        store.con.execute("SELECT 1/'x'::INTEGER")
    message = failure_message(caught.value)
    assert message is not None and str(tmp_path / "s.duckdb") in message and "\n" not in message


def test_recursion_errors_are_one_line() -> None:
    from captrack.failures import failure_message

    message = failure_message(RecursionError("maximum recursion depth exceeded"))
    assert message is not None and "nested too deeply" in message


@pytest.mark.parametrize("step", [str(2**63), "100000000000000000000000000000"])
def test_a_step_past_what_the_store_holds_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], step: str) -> None:
    run = tmp_path / "run"
    write_run(run, "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    with pytest.raises(SystemExit) as exited:
        main(["ingest", str(run), "--store", str(tmp_path / "s.duckdb"), "--step", step])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "--step" in err and not (tmp_path / "s.duckdb").exists()


def test_a_global_step_past_what_the_store_holds_is_one_line_naming_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    results = write_run(run, "m", [FakeTask(FACTS, {"acc": [1, 0]})])
    state = results.parent / "trainer_state.json"
    state.write_text(json.dumps({"global_step": 10**30, "epoch": 1.0}))
    assert main(["ingest", str(run), "--store", str(tmp_path / "s.duckdb")]) == 1
    _one_line_error(capsys, str(state), "global_step")
