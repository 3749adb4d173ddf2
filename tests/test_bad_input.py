"""Bad input through the CLI: a clear message, a non-zero exit, and nothing already stored changed.

Each test feeds one hostile or broken input (issue 17) to `captrack ingest` / `compare` / `run` /
`leaderboard` and checks the message names what is wrong, the exit status is 1, and the store (its
rows, or its bytes where DuckDB must not even open it) is as it was.
"""

from __future__ import annotations

import contextlib
import io
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main

TASK = "captrack_probe_c1_facts"


def _cli(*args: str) -> tuple[int, str]:
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(list(args))
    return status, " ".join(buffer.getvalue().split())


def _snapshot(store: Path) -> dict[str, list[tuple]]:
    """Every row of every table (ingest time excluded), to compare a store before and after."""
    with duckdb.connect(str(store), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY 1").fetchall()]
        return {t: con.execute(f"SELECT * EXCLUDE (ingested_at) FROM {t} ORDER BY ALL" if t == "runs"
                               else f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in tables}


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store holding one good run, filed as 'base'."""
    write_run(tmp_path / "good", "base", [FakeTask(TASK, {"acc": [1, 0, 1]})])
    path = tmp_path / "s.duckdb"
    assert _cli("ingest", str(tmp_path / "good"), "--store", str(path), "--name", "base")[0] == 0
    return path


def _bad_run(tmp_path: Path, values: list, doc_ids: list[int] | None = None, metric: str = "acc") -> Path:
    write_run(tmp_path / "bad", "bad", [FakeTask(TASK, {metric: values}, doc_ids=doc_ids)])
    return tmp_path / "bad"


# -- a run's identity is its content ------------------------------------------------------------------

def test_the_same_run_under_another_name_is_refused_naming_both(tmp_path: Path, store: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(tmp_path / "good", copy)  # byte-identical results file: the same run
    before = _snapshot(store)
    status, message = _cli("ingest", str(copy), "--store", str(store), "--name", "other")
    assert status == 1
    assert "'base'" in message and "'other'" in message and "--rename" in message
    assert _snapshot(store) == before


def test_rename_moves_the_run_when_asked(tmp_path: Path, store: Path) -> None:
    status, _ = _cli("ingest", str(tmp_path / "good"), "--store", str(store), "--name", "other", "--rename")
    assert status == 0
    with duckdb.connect(str(store), read_only=True) as con:
        assert con.execute("SELECT DISTINCT model FROM samples").fetchall() == [("other",)]
        assert con.execute("SELECT model FROM runs").fetchall() == [("other",)]


def test_comparing_a_run_with_a_copy_of_itself_says_so(tmp_path: Path, store: Path) -> None:
    shutil.copytree(tmp_path / "good", tmp_path / "copy")
    out = tmp_path / "out"
    status, message = _cli("compare", "--base", str(tmp_path / "good"), "--variant", f"v={tmp_path / 'copy'}",
                           "--out", str(out), "--bootstrap", "0")
    assert status == 1 and "'base'" in message and "'v'" in message
    assert not out.exists()


# -- samples files ingest refuses, naming file and line ---------------------------------------------

@pytest.mark.parametrize(("values", "doc_ids", "line", "said"), [
    ([1, 0, 1, 0], [0, 1, 1, 2], 3, "doc_id 1 (filter 'none') appears again (first on line 2)"),
    ([1, float("inf"), 0], None, 2, "acc is inf, not a finite number"),
    ([1, 0, float("nan")], None, 3, "acc is nan, not a finite number"),
    ([1, 5.0, 0], None, 2, "acc is 5.0, outside [0, 1]"),
    ([1, -0.5, 0], None, 2, "acc is -0.5, outside [0, 1]"),
    (["1", "Infinity", "0"], None, 2, "acc is 'Infinity', not a finite number"),
], ids=["duplicate-doc-id", "infinity", "nan", "accuracy-5", "negative", "infinity-string"])
def test_samples_that_would_give_silent_numbers_are_refused(
    tmp_path: Path, store: Path, values: list, doc_ids: list[int] | None, line: int, said: str
) -> None:
    bad = _bad_run(tmp_path, values, doc_ids)  # json.dumps writes inf/nan as the literals Infinity/NaN
    samples = next(bad.rglob("samples_*.jsonl"))
    before = _snapshot(store)
    status, message = _cli("ingest", str(tmp_path / "good"), str(bad), "--store", str(store))
    assert status == 1
    assert f"{samples.name}, line {line}:" in message and said in message and "nothing was ingested" in message
    assert _snapshot(store) == before


def test_out_of_range_values_of_a_metric_that_is_not_a_proportion_are_kept(tmp_path: Path, store: Path) -> None:
    bad = _bad_run(tmp_path, [120.0, 80.0, 3.0], metric="verbosity")  # a count: any finite number
    assert _cli("ingest", str(bad), "--store", str(store))[0] == 0
    bad2 = tmp_path / "unknown"
    write_run(bad2, "unknown", [FakeTask("captrack_other", {"my_metric": [7.0, -2.0]})])  # undeclared: not range-checked
    assert _cli("ingest", str(bad2), "--store", str(store))[0] == 0


def test_undecodable_bytes_are_refused_naming_the_line(tmp_path: Path, store: Path) -> None:
    bad = _bad_run(tmp_path, [1, 0, 1])
    samples = next(bad.rglob("samples_*.jsonl"))
    lines = samples.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"question 1", b"question \xff\xfe 1")
    samples.write_bytes(b"".join(lines))
    before = _snapshot(store)
    status, message = _cli("ingest", str(bad), "--store", str(store))
    assert status == 1 and f"{samples.name}, line 2: undecodable bytes (not UTF-8)" in message
    assert _snapshot(store) == before


def test_a_results_file_that_is_not_utf8_is_a_message(tmp_path: Path, store: Path) -> None:
    bad = _bad_run(tmp_path, [1, 0, 1])
    results = next(bad.rglob("results_*.json"))
    results.write_bytes(results.read_bytes().replace(b'"model_name"', b'"model\xff_name"'))
    status, message = _cli("ingest", str(bad), "--store", str(store))
    assert status == 1 and results.name in message and "not a readable lm-eval results file" in message


# -- opening the store ---------------------------------------------------------------------------------

@contextlib.contextmanager
def _held(store: Path, read_only: bool) -> Iterator[int]:
    """Another process holding the store open until the block ends; yields its PID."""
    code = ("import duckdb, sys; c = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == '1'); "
            "print('open', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(store), "1" if read_only else "0"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
        yield proc.pid
    finally:
        proc.communicate("")


def test_a_locked_store_names_the_process_holding_it(tmp_path: Path, store: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CAPTRACK_LOCK_WAIT", "0.5")
    before = _snapshot(store)
    with _held(store, read_only=False) as pid:
        status, message = _cli("ingest", str(tmp_path / "good"), "--store", str(store), "--name", "base")
    assert status == 1
    assert f"locked by process {pid}" in message and "try again" in message
    assert _snapshot(store) == before


def test_compare_opens_the_store_read_only(tmp_path: Path, store: Path) -> None:
    write_run(tmp_path / "sft", "sft", [FakeTask(TASK, {"acc": [1, 1, 0]})])
    assert _cli("ingest", str(tmp_path / "sft"), "--store", str(store), "--name", "sft")[0] == 0
    with _held(store, read_only=True):  # a reader elsewhere: only another read-only open can share the file
        status, message = _cli("compare", "--store", str(store), "--base", "base", "--variant", "sft",
                               "--out", str(tmp_path / "out"), "--bootstrap", "0")
    assert status == 0, message
    assert (tmp_path / "out" / "drift.csv").is_file()


def _sqlite(path: Path) -> Path:
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (x)")
    return path


@pytest.mark.parametrize("kind", ["sqlite", "text", "empty"])
def test_a_store_that_is_not_duckdb_is_refused_before_duckdb_opens_it(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "store.db"
    if kind == "sqlite":
        _sqlite(path)
    else:
        path.write_text("" if kind == "empty" else "model,task\nbase,x\n")
    before = path.read_bytes()
    write_run(tmp_path / "run", "base", [FakeTask(TASK, {"acc": [1, 0]})])
    said = {"sqlite": "an SQLite database", "text": "not a DuckDB database", "empty": "an empty file"}[kind]
    for args in (["ingest", str(tmp_path / "run"), "--store", str(path)],
                 ["compare", "--store", str(path), "--base", "a", "--variant", "b", "--out", str(tmp_path / "o")]):
        status, message = _cli(*args)
        assert status == 1 and str(path) in message and said in message and "not a captrack store" in message
    assert path.read_bytes() == before and not (tmp_path / "o").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "store.db"]  # no .wal, nothing downloaded beside


def test_compare_on_a_store_that_does_not_exist_creates_nothing(tmp_path: Path) -> None:
    status, message = _cli("compare", "--store", str(tmp_path / "none" / "s.duckdb"), "--base", "a", "--variant", "b",
                           "--out", str(tmp_path / "o"))
    assert status == 1 and "no such store" in message and "captrack ingest" in message
    assert list(tmp_path.iterdir()) == []


def test_no_extension_is_ever_installed_or_loaded() -> None:
    from captrack.results.store import Store

    with Store() as s:
        settings = dict(s.con.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name LIKE 'auto%_known_extensions'").fetchall())
    assert settings == {"autoinstall_known_extensions": "false", "autoload_known_extensions": "false"}



# -- config files: a schema per file kind, messages naming key, value and what is allowed ----------------

_EXPERIMENT = ("workdir: work\nleaderboard: board\n"
               "base: {name: b, model_args: {pretrained: x}}\nvariants:\n  - {name: v, model_args: {pretrained: y}}\n")


@pytest.mark.parametrize(("line", "said"), [
    ("batch_size: auto", "key 'batch_size' is 'auto' (str): input should be a valid integer; expected a whole number ≥ 1"),
    ("seeds: 3", "key 'seeds' is 3 (int): input should be a valid list; expected a list of whole numbers"),
    ('seeds: "12"', "key 'seeds' is '12' (str): input should be a valid list; expected a list of whole numbers"),
    ("seeds: [0, 0]", "key 'seeds' is [0, 0]: each seed once"),
    ("limit: 1.5", "key 'limit' is 1.5 (float); expected null, a whole number of items ≥ 1, or a fraction in (0, 1]"),
    ("tasks: captrack_probe_*", "key 'tasks' is 'captrack_probe_*' (str): input should be a valid list"),
    ("batchsize: 8", "key 'batchsize' is not allowed (value 8 (int)); allowed keys: name,"),
])
def test_a_malformed_experiment_is_a_message_and_no_work(tmp_path: Path, line: str, said: str) -> None:
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(line + "\n" + _EXPERIMENT)
    status, message = _cli("run", str(manifest), "--dry-run")
    assert status == 1 and str(manifest) in message and said in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.yaml"]


_BOARD_TAIL = "store: s.duckdb\n"


@pytest.mark.parametrize(("body", "said"), [
    ("- a\n- b\n", "must be a mapping of keys (key: value lines); got ['a', 'b'] (list)"),
    ("comparisons: {base: b, variants: [{name: x}]}\n" + _BOARD_TAIL,
     "key 'comparisons' is {'base': 'b', 'variants': [{'name': 'x'}]} (dict): input should be a valid list"),
    ("comparisons: [base]\n" + _BOARD_TAIL, "key 'comparisons[0]' is 'base' (str): not a mapping"),
    ("comparisons:\n  - {base: b, variants: sft}\n" + _BOARD_TAIL,
     "key 'comparisons[0].variants' is 'sft' (str): input should be a valid list"),
    ("comparisons:\n  - {base: b, variants: [sft]}\n" + _BOARD_TAIL, "key 'comparisons[0].variants[0]' is 'sft' (str): not a mapping"),
    ("comparisons:\n  - {variants: [{name: x}]}\n" + _BOARD_TAIL, "key 'comparisons[0].base' is missing; expected the base model's name"),
    ("comparisons:\n  - {base: b, variants: [{algorithm: SFT}]}\n" + _BOARD_TAIL, "key 'comparisons[0].variants[0].name' is missing"),
    ("reference: x.csv\n", "key 'reference' is 'x.csv' (str): not a mapping; expected a mapping {base: CSV, variants: {label: CSV}}"),
    ("bootstrap: many\ncomparisons:\n  - {base: b, variants: [{name: x}]}\n" + _BOARD_TAIL,
     "key 'bootstrap' is 'many' (str): input should be a valid integer"),
    ("capabilities: C1\ncomparisons:\n  - {base: b, variants: [{name: x}]}\n" + _BOARD_TAIL,
     "key 'capabilities' is 'C1' (str): input should be a valid list"),
])
def test_a_malformed_leaderboard_yaml_is_a_message_and_nothing_written(tmp_path: Path, body: str, said: str) -> None:
    (tmp_path / "leaderboard.yaml").write_text(body)
    status, message = _cli("leaderboard", str(tmp_path))
    assert status == 1 and "leaderboard.yaml" in message and said in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["leaderboard.yaml"]


@pytest.mark.parametrize(("base", "said"), [
    ("base: {name: b, model_args: {pretrained: x}, batch_size: auto}",
     "key 'base.batch_size' is not allowed (value 'auto' (str)); allowed keys: name, algorithm, family, size, data, model, model_args, train, import,"),
    ("base:\n  - {name: b, model_args: {pretrained: x}, batch_size: 4}",
     "key 'base[0].batch_size' is not allowed (value 4 (int)); allowed keys: name, algorithm, family, size, data, model, model_args, train, import,"),
])
def test_a_key_misplaced_under_base_is_named_as_written(tmp_path: Path, base: str, said: str) -> None:
    """No pydantic internals (`base.CheckpointEntry`, `list[CheckpointEntry]`, `import_`): the user's key and where it belongs."""
    manifest = tmp_path / "exp.yaml"
    manifest.write_text(f"workdir: work\n{base}\nvariants:\n  - {{name: v, model_args: {{pretrained: y}}, import: 3}}\n")
    status, message = _cli("run", str(manifest), "--dry-run")
    assert status == 1 and said in message and "'batch_size' is a top-level key of this file" in message
    assert "key 'variants[0].import' is 3 (int): not a mapping; expected a mapping {format:" in message
    for internal in ("CheckpointEntry", "import_", "list["):
        assert internal not in message


def test_store_mode_refuses_comparing_a_model_with_itself(tmp_path: Path, store: Path) -> None:
    status, message = _cli("compare", "--store", str(store), "--base", "base", "--variant", "base", "--out", str(tmp_path / "o"))
    assert status == 1 and "--base 'base' is also given as a --variant" in message
    assert not (tmp_path / "o").exists()
