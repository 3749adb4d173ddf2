"""One `captrack run` per work folder at a time: an exclusive lock on ``<workdir>/.captrack-run.lock``.

The lock is an OS file lock (``fcntl.flock``), so it goes away with its holder however that ends
(a kill -9 included) and never needs cleaning by hand. The file holds the holder's PID and start
time, which a second runner names when it refuses (or, with ``wait``, while it waits).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from captrack.errors import InputError
from captrack.pipeline.layout import LOCK_NAME, WorkFolder

__all__ = ["LOCK_NAME", "WorkFolderBusyError", "work_folder_lock"]


class WorkFolderBusyError(InputError):
    """Another `captrack run` holds the work folder."""


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    text = handle.read().strip()
    return text or "a process that has not written its PID yet"


def _try_lock(handle: IO[str]) -> bool:
    try:
        import fcntl
    except ImportError:  # Windows: no flock; one runner per folder is then the user's to keep
        return True
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextlib.contextmanager
def work_folder_lock(workdir: Path, wait: bool = False, poll_s: float = 1.0,
                     log: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the work folder's run lock for the block.

    Args:
        workdir: the experiment's work folder (created when missing).
        wait: when another runner holds it, wait for it to finish instead of refusing.
        poll_s: seconds between tries while waiting.
        log: told once that this runner waits, and for whom.

    Raises:
        WorkFolderBusyError: another runner holds the lock and `wait` is False (its PID named).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = WorkFolder(workdir).lock
    handle = path.open("a+", encoding="utf-8")
    try:
        told = False
        while not _try_lock(handle):
            holder = _holder(handle)
            if not wait:
                raise WorkFolderBusyError(
                    f"work folder {workdir} is in use by another `captrack run` ({holder}); wait for it to finish, "
                    "stop it, or rerun with --wait to start when it ends")
            if log is not None and not told:
                log(f"work folder {workdir} is in use by another `captrack run` ({holder}); waiting for it to finish")
                told = True
            time.sleep(poll_s)
        handle.seek(0)
        handle.truncate()
        handle.write(f"PID {os.getpid()}, started {dt.datetime.now().isoformat(timespec='seconds')}\n")
        handle.flush()
        yield
    finally:
        handle.close()  # closing the file releases the lock
