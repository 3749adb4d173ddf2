"""Replace a store file only with one that has been verified: checkpointed, reopened, its rows counted.

`captrack run` builds its store as ``store.tmp.duckdb`` and publishes it over ``store.duckdb`` with
:func:`publish_store`. A store cut short (a full disk, a kill) fails the check and the earlier store
stays; DuckDB's write-ahead log (``<file>.wal``) is folded into the file before the check, so the
renamed file holds everything by itself.
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from captrack.errors import InputError
from captrack.files import fsync_folder

__all__ = ["discard_store", "publish_store", "wal_path"]


def wal_path(path: Path) -> Path:
    """DuckDB's write-ahead log of a store file."""
    return path.with_name(path.name + ".wal")


def discard_store(path: Path) -> None:
    """Remove a store file and its write-ahead log (a temporary store that failed)."""
    path.unlink(missing_ok=True)
    wal_path(path).unlink(missing_ok=True)


def _count_rows(path: Path) -> tuple[int, int]:
    """(runs, samples) rows of the store at `path`, opened read-only."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        runs = con.execute("SELECT count(*) FROM runs").fetchone()
        samples = con.execute("SELECT count(*) FROM samples").fetchone()
    finally:
        con.close()
    return int(runs[0] if runs else 0), int(samples[0] if samples else 0)


def publish_store(temp: Path, target: Path, expected_runs: int, expected_rows: int) -> Path:
    """Check the closed store `temp` holds `expected_runs` runs and `expected_rows` sample rows, then rename it over `target`.

    Raises:
        InputError: `temp` cannot be checkpointed or opened, or holds other counts; `temp` is removed
            and `target` (an earlier good store) is left as it was.
    """
    try:
        con = duckdb.connect(str(temp))
        try:
            con.execute("CHECKPOINT")  # fold the write-ahead log into the file
        finally:
            con.close()
        if wal_path(temp).exists():
            raise InputError(f"{temp}: its write-ahead log could not be folded into the file")
        runs, rows = _count_rows(temp)
    except (duckdb.Error, OSError, InputError) as exc:
        discard_store(temp)
        raise InputError(f"the new store {temp} could not be verified ({' '.join(str(exc).split())}); "
                         f"{'the earlier store ' + str(target) + ' is kept' if target.exists() else 'no store was written'}; "
                         "free disk space if it is full and rerun") from exc
    if (runs, rows) != (expected_runs, expected_rows):
        discard_store(temp)
        raise InputError(f"the new store {temp} holds {runs} runs and {rows} rows where {expected_runs} and "
                         f"{expected_rows} were ingested; it was discarded and the earlier store is kept; rerun")
    fd = os.open(temp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    wal_path(target).unlink(missing_ok=True)  # an earlier store's stale log must never be replayed onto this one
    os.replace(temp, target)
    fsync_folder(target.parent)
    return target
