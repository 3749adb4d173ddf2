"""Writing files so that a reader never sees half of one (or half a folder): temp beside the target, then rename.

Every file captrack writes atomically goes through :func:`write_atomic`: the bytes go to a temp file
in the target's folder, are flushed and fsync'ed, the temp file gets the mode a plain ``open(path,
"w")`` would have given it (``0o666`` minus the process umask, so 0644 by default, not mkstemp's
0600), and only then is it renamed over the target and the folder entry fsync'ed. A full disk or a
kill leaves the old file (or none), never an empty or truncated one.

What a killed process leaves behind (a staging folder beside an output folder, its scratch folder in TMPDIR) says
whose it is in its name, made with the folder (no moment where it exists unnamed): the host, the PID and the
process's start time (``HOST8-PID-START``: a reused PID is told apart). The next :func:`staged_folder` for the same
folder, and :func:`remove_stale_scratch`, remove what such a name proves was left by a captrack process of this
user on this host that no longer runs, and nothing else.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.processes import process_gone, process_start

__all__ = ["REPLACED_MARK", "SCRATCH_PREFIX", "STAGING_MARK", "current_umask", "default_mode", "file_mode", "fsync_folder",
           "owner_tag", "read_json_or_none", "remove_stale_scratch", "remove_stale_staging", "scratch_folder",
           "share_like_umask", "staged_folder", "write_atomic"]

STAGING_MARK = ".captrack-staging-"
"""In the name of a staging folder beside OUT (the new content): ``.OUT.captrack-staging-HOST8-PID-START-XXXXXXXX``."""
REPLACED_MARK = ".captrack-replaced-"
"""In the name of the folder the old OUT is moved into (as ``old``) to be deleted: ``.OUT.captrack-replaced-...``."""
SCRATCH_PREFIX = "captrack-"
"""The start of a scratch folder's name in TMPDIR: ``captrack-HOST8-PID-START-XXXXXXXX``."""
_OWNER = re.compile(r"(?P<host>[0-9a-f]{8})-(?P<pid>[1-9][0-9]{0,9})-(?P<start>[0-9]{1,20}|x)-[a-z0-9_]{8}")
"""What follows a mark in such a name (tempfile.mkdtemp's eight random characters last)."""


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows (/proc on Linux), else set and restored."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def file_mode() -> int:
    """The mode a newly created plain file gets under the current umask (0o644 with the usual 022)."""
    return 0o666 & ~current_umask()


def default_mode(directory: bool = False) -> int:
    """The mode `open()`/`mkdir()` would give a new file (0o666) or folder (0o777) under the umask: 0644/0755 at 022."""
    return (0o777 if directory else 0o666) & ~current_umask()


def share_like_umask(path: Path | str) -> Path:
    """Give a file or folder made by tempfile (always 0600/0700) the mode a plain create would have; returns it.

    tempfile's private modes are right for scratch space but wrong for anything published by rename:
    a leaderboard served by a web server or a comparison shared with a team must be readable like any
    other file the user writes.
    """
    target = Path(path)
    os.chmod(target, default_mode(directory=target.is_dir()))
    return target


def fsync_folder(folder: Path) -> None:
    """Make a rename or creation in `folder` durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, data: str | bytes | Iterator[str | bytes]) -> Path:
    """Write `data` (text as UTF-8; an iterator of chunks, text or bytes, is written as it comes) to a temp file beside
    `path`, fsync it, then rename it into place; returns `path`.

    The file ends up with the umask's mode (0644 by default). On any error (a full disk included)
    the temp file is removed and `path` keeps its old content.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for chunk in [payload] if isinstance(payload, bytes) else payload:
                handle.write(chunk if isinstance(chunk, bytes) else chunk.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.filename is None:  # a write or fsync error names no file: name the one being written
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_folder(path.parent)
    return path


def read_json_or_none(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing, unreadable, empty or not JSON (e.g. cut short by a full disk)."""
    try:
        return load_json(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None


@contextlib.contextmanager
def staged_folder(folder: Path, before_swap: Callable[[], object] | None = None) -> Iterator[Path]:
    """Yield an empty temp folder beside `folder`; on success it replaces `folder` whole, on error it is removed.

    A reader sees the old folder or the new one, never a mix (the swap is two renames). Everything in
    `folder` is deleted by the swap: the caller checks first that all of it is its own
    (captrack.report.ownership.claim_folder), and `before_swap` (e.g. that check again) runs right before
    the swap; if it raises, the staging folder is removed and `folder` is left as it was.

    The staging folder (``.NAME.captrack-staging-*``) and the one the old folder is moved into to be deleted
    (``.NAME.captrack-replaced-*``) are named after this process: what one killed with kill -9 left is removed by the
    next call for the same `folder` (:func:`remove_stale_staging`).
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(folder)
    staging = _beside(folder, STAGING_MARK)
    try:
        yield staging
        if before_swap is not None:
            before_swap()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap(staging, folder)


def owner_tag() -> str:
    """This process as the names of its temporary folders say it: ``HOST8-PID-START`` (HOST8: the first 8 hex
    digits of the host name's SHA-256; START: captrack.processes.process_start, ``x`` where not known)."""
    host = hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]
    return f"{host}-{os.getpid()}-{process_start(os.getpid()) or 'x'}"


def _beside(folder: Path, mark: str) -> Path:
    """A new, empty folder beside `folder`, named ``.NAME<mark><owner_tag>-XXXXXXXX``."""
    return share_like_umask(tempfile.mkdtemp(prefix=f".{folder.name}{mark}{owner_tag()}-", dir=folder.parent))


def _swap(staging: Path, folder: Path) -> None:
    """Put `staging` in `folder`'s place; the old `folder` goes into a folder of its own (REPLACED_MARK), removed after."""
    trash = _beside(folder, REPLACED_MARK) if folder.exists() else None
    try:
        if trash is not None:
            os.replace(folder, trash / "old")
        os.replace(staging, folder)
    except BaseException:  # SIGTERM (captrack.processes.Terminated) or a failed rename: the old folder back in place
        if trash is not None and (trash / "old").exists() and not folder.exists():
            os.replace(trash / "old", folder)
        shutil.rmtree(staging, ignore_errors=True)
        raise
    finally:
        if trash is not None:
            shutil.rmtree(trash, ignore_errors=True)


def _left_by_dead_owner(path: Path, prefix: str) -> bool:
    """`path` is a real folder of this user named `prefix` + an owner tag of this host whose process no longer runs."""
    if not path.name.startswith(prefix):
        return False
    owner = _OWNER.fullmatch(path.name[len(prefix):])
    if owner is None or owner["host"] != owner_tag().split("-")[0] or int(owner["pid"]) == os.getpid():
        return False
    try:
        if path.is_symlink() or not path.is_dir() or path.stat().st_uid != os.getuid():
            return False
    except (OSError, AttributeError):  # AttributeError: no getuid (Windows)
        return False
    return process_gone(int(owner["pid"]), None if owner["start"] == "x" else owner["start"])


def remove_stale_staging(folder: Path) -> list[Path]:
    """Remove the folders beside `folder` that :func:`staged_folder` made for it in a captrack process that no longer
    runs (killed before or during its swap; an old `folder` found while `folder` is missing is put back first).
    Returns what was removed."""
    removed: list[Path] = []
    for mark in (REPLACED_MARK, STAGING_MARK):
        prefix = f".{folder.name}{mark}"
        try:
            found = sorted(folder.parent.glob(f"{glob.escape(prefix)}*"))
        except OSError:
            return removed
        for path in found:
            if not _left_by_dead_owner(path, prefix):
                continue
            if mark == REPLACED_MARK and (path / "old").is_dir() and not os.path.lexists(folder):
                os.replace(path / "old", folder)  # killed between the swap's two renames
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


_scratch: tuple[int, Path] | None = None  # (the process that made it, the folder)


def scratch_folder() -> Path:
    """This process's folder for temporary files, ``TMPDIR/captrack-HOST8-PID-START-XXXXXXXX``: made at the first call
    (after :func:`remove_stale_scratch`), removed when the process exits (after SIGTERM too, see
    captrack.processes.stop_signals_as_interrupt)."""
    global _scratch
    if _scratch is None or _scratch[0] != os.getpid() or not _scratch[1].is_dir():
        remove_stale_scratch()
        folder = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{owner_tag()}-"))
        _scratch = (os.getpid(), folder)
        atexit.register(_remove_scratch, os.getpid(), folder)
    return _scratch[1]


def _remove_scratch(pid: int, folder: Path) -> None:
    if os.getpid() == pid:  # never in a forked child: the folder is its parent's
        shutil.rmtree(folder, ignore_errors=True)


def remove_stale_scratch() -> list[Path]:
    """Remove the scratch folders in TMPDIR (:func:`scratch_folder`) of captrack processes that no longer run (killed
    with kill -9); returns them. Anything else there is left alone."""
    tmp = Path(tempfile.gettempdir())
    try:
        found = sorted(tmp.glob(f"{SCRATCH_PREFIX}*"))
    except OSError:
        return []
    stale = [path for path in found if _left_by_dead_owner(path, SCRATCH_PREFIX)]
    for path in stale:
        shutil.rmtree(path, ignore_errors=True)
    return stale
