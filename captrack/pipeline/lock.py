"""One `captrack run` per work folder at a time: an exclusive lock on ``<workdir>/.captrack-run.lock``.

The lock is an OS file lock (``fcntl.flock``), so it goes away with its holder however that ends
(a kill -9 included) and never needs cleaning by hand. The file holds the holder's PID and start
time, which a second runner names when it refuses (or, with ``wait``, while it waits).

The file is opened without following links (``O_NOFOLLOW``) and must be a plain file with one name:
a symbolic link, a hard link to another file or a FIFO planted there is refused, never truncated or
written through. A lock is a lock on one inode, so the holder records the inode it locked and
:meth:`WorkFolderLock.check` confirms that the path still names it: a lock file deleted or replaced
while a run works (which would let a second runner lock a new file beside it) stops the run at the
next stage boundary (captrack.pipeline.runner calls it before every stage and every marker).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from captrack.errors import InputError
from captrack.files import file_mode
from captrack.pipeline.layout import LOCK_NAME, WorkFolder

__all__ = ["LOCK_NAME", "LockLostError", "WorkFolderBusyError", "WorkFolderLock", "work_folder_lock"]


class WorkFolderBusyError(InputError):
    """Another `captrack run` holds the work folder."""


class LockLostError(InputError):
    """The lock file of a running `captrack run` was deleted or replaced: another runner may work beside it."""


@dataclass(frozen=True)
class WorkFolderLock:
    """The lock this runner holds: its path and the (device, inode) of the file it locked."""

    path: Path
    identity: tuple[int, int]

    def check(self) -> None:
        """Confirm that the lock file is still the one this runner locked.

        Raises:
            LockLostError: it was deleted or replaced (named, with what to do).
        """
        try:
            now = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            what = "was deleted"
        else:
            if (now.st_dev, now.st_ino) == self.identity:
                return
            what = "was replaced by another file"
        raise LockLostError(
            f"the lock file {self.path} {what} while this `captrack run` worked, so another run may have started in "
            "the same work folder: stopped here (finished stages are kept); make sure no other `captrack run` works "
            "there, then run it again to resume")


def _holder(handle: IO[str]) -> str:
    handle.seek(0)
    text = handle.read(400).strip()
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


def _open_lock(path: Path) -> IO[str]:
    """Open (creating) the lock file: never through a link, only a plain file with one name.

    Raises:
        InputError: the path is a symbolic link, or not a plain file, or a file with other names (a hard link).
    """
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fix = f"captrack never makes one there: remove it (rm {path}) and rerun"
    try:
        fd = os.open(path, flags, file_mode())
    except OSError as exc:
        if path.is_symlink():  # ELOOP (Linux) or EMLINK (some BSDs) from O_NOFOLLOW
            raise InputError(f"the lock file {path} is a symbolic link (to {os.readlink(path)}); {fix}") from exc
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
        os.close(fd)
        what = "not a plain file" if not stat.S_ISREG(info.st_mode) else f"a hard link ({info.st_nlink} names for one file)"
        raise InputError(f"the lock file {path} is {what}; {fix}")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)
    return os.fdopen(fd, "r+", encoding="utf-8")


@contextlib.contextmanager
def work_folder_lock(workdir: Path, wait: bool = False, poll_s: float = 1.0,
                     log: Callable[[str], None] | None = None) -> Iterator[WorkFolderLock]:
    """Hold the work folder's run lock for the block; yields it (call its ``check`` at each stage boundary).

    Args:
        workdir: the experiment's work folder (created when missing).
        wait: when another runner holds it, wait for it to finish instead of refusing.
        poll_s: seconds between tries while waiting.
        log: told once that this runner waits, and for whom.

    Raises:
        WorkFolderBusyError: another runner holds the lock and `wait` is False (its PID named).
        InputError: the lock file is a symbolic link, a hard link or not a plain file (nothing was written to it).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    path = WorkFolder(workdir).lock
    told = False
    while True:
        handle = _open_lock(path)
        try:
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
            info = os.fstat(handle.fileno())
            lock = WorkFolderLock(path, (info.st_dev, info.st_ino))
            try:
                lock.check()
            except LockLostError:  # the holder we waited for deleted it as it ended: lock the file there now
                handle.close()
                continue
        except BaseException:
            handle.close()
            raise
        break
    try:
        handle.seek(0)
        handle.truncate()
        handle.write(f"PID {os.getpid()}, started {dt.datetime.now().isoformat(timespec='seconds')}\n")
        handle.flush()
        yield lock
    finally:
        handle.close()  # closing the file releases the lock
