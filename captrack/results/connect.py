"""Opening a store file: only a DuckDB database, never over the network, waiting briefly for a lock."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import duckdb

from captrack.errors import InputError

__all__ = ["DUCKDB_MAGIC", "LOCK_WAIT_ENV", "check_duckdb_file", "check_intact", "connect"]

DUCKDB_MAGIC = b"DUCK"
"""A DuckDB database file holds these bytes at offset 8 (after the header checksum)."""

LOCK_WAIT_ENV = "CAPTRACK_LOCK_WAIT"
"""Seconds to keep retrying a store another process holds (default 5)."""

# No extension is ever installed or loaded behind the user's back: a file DuckDB does not recognise
# would otherwise make it fetch a scanner extension over HTTP.
_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}
_PID = re.compile(r"Conflicting lock is held in (?P<holder>.*?) \(PID (?P<pid>\d+)\)")


def check_duckdb_file(path: Path) -> None:
    """Refuse an existing file that is not a DuckDB database, before DuckDB opens it.

    Raises:
        InputError: the file is empty or does not carry DuckDB's magic bytes (e.g. SQLite, text).
    """
    if not path.exists():
        return
    if not path.is_file():
        raise InputError(f"{path}: is a folder, not a DuckDB store; give a .duckdb file path")
    with path.open("rb") as handle:
        head = handle.read(16)
    if head[8:12] == DUCKDB_MAGIC:
        return
    what = "an SQLite database" if head.startswith(b"SQLite format 3") else (
        "an empty file" if not head else f"a file that is not a DuckDB database (it starts with {head[:12]!r})")
    raise InputError(
        f"{path}: not a captrack store: it is {what}, and a store is a DuckDB file; nothing was read or written. "
        "Point --store at a store written by `captrack ingest`, or at a path that does not exist yet."
    )


def _lock_wait() -> float:
    raw = os.environ.get(LOCK_WAIT_ENV, "5")
    try:
        return max(float(raw), 0.0)
    except ValueError as exc:
        raise InputError(f"{LOCK_WAIT_ENV}={raw!r}: expected a number of seconds, e.g. 5") from exc


def connect(path: str, read_only: bool, check: bool = True) -> duckdb.DuckDBPyConnection:
    """Connect to a store file (or ``:memory:``); a lock held elsewhere is retried for a few seconds; an existing
    store opened for writing is read whole first (`check_intact`; not with `check`, for a store just checked).

    Raises:
        InputError: not a DuckDB file, a read-only store that does not exist, a truncated or corrupted store,
            or a lock still held by another process after waiting (its PID named).
    """
    if path == ":memory:":
        return duckdb.connect(path, config=dict(_CONFIG))
    file = Path(path)
    check_duckdb_file(file)
    if read_only and not file.exists():
        raise InputError(f"{file}: no such store; create it with `captrack ingest RUN_DIR --store {file}`")
    existed = file.exists()
    con = _open(file, read_only)
    if existed and not read_only and check:
        try:  # never write into a damaged store: the write would "succeed" and leave it corrupt
            check_intact(con, path)
        except BaseException:
            con.close()
            raise
    return con


def _open(file: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """duckdb.connect, a lock held elsewhere retried for a few seconds."""
    wait = _lock_wait()
    deadline = time.monotonic() + wait
    while True:
        try:
            return duckdb.connect(str(file), read_only=read_only, config=dict(_CONFIG))
        except duckdb.IOException as exc:
            held = _PID.search(str(exc))
            if held is None and "lock" not in str(exc).lower():
                raise InputError(f"{file}: cannot open the store: {exc}") from exc
            if time.monotonic() >= deadline:
                raise InputError(_locked_message(file, held, wait)) from exc
            time.sleep(0.2)
        except duckdb.Error as exc:  # a truncated or corrupted file: DuckDB's checksum or header checks
            raise InputError(_corrupt_message(file, exc)) from exc


def check_intact(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Read every block of every table of an opened store (DuckDB verifies each block's checksum as it reads it).

    Run before a store is written to: a write into a store with a damaged block would otherwise succeed
    and leave it corrupt. Costs one scan (about 0.15 s per million sample rows).

    Raises:
        InputError: a block of the store does not match its checksum (the file is named; nothing was written).
    """
    tables = [name for (name,) in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND NOT temporary").fetchall()]
    for table in tables:
        quoted = '"' + table.replace('"', '""') + '"'
        try:
            con.execute(f"SELECT bit_xor(hash({quoted})) FROM {quoted}").fetchall()
        except duckdb.Error as exc:
            raise InputError(_corrupt_message(Path(path), exc)) from exc


def _corrupt_message(file: Path, exc: Exception) -> str:
    return (f"{file}: the store cannot be read ({' '.join(str(exc).split())[:300]}): it is truncated or corrupted; "
            "nothing was written. Restore it from a backup, or ingest the runs again into a new store")


def _locked_message(file: Path, held: re.Match[str] | None, wait: float) -> str:
    who = f"process {held['pid']} ({held['holder']})" if held else "another process"
    return (
        f"{file}: the store is locked by {who}; waited {wait:g} s. A DuckDB file is open for writing by one "
        f"process at a time: let that process finish (an ingest, `captrack run` or `captrack judge`) or stop it "
        f"(kill {held['pid'] if held else 'PID'}), then try again (wait longer with {LOCK_WAIT_ENV}=SECONDS)."
    )
