"""Writing files so that a reader never sees half of one (or half a folder): temp beside the target, then rename.

Every file captrack writes atomically goes through :func:`write_atomic`: the bytes go to a temp file
in the target's folder, are flushed and fsync'ed, the temp file gets the mode a plain ``open(path,
"w")`` would have given it (``0o666`` minus the process umask, so 0644 by default, not mkstemp's
0600), and only then is it renamed over the target and the folder entry fsync'ed. A full disk or a
kill leaves the old file (or none), never an empty or truncated one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from captrack.bounded import load_json

__all__ = ["current_umask", "default_mode", "file_mode", "fsync_folder", "read_json_or_none", "share_like_umask",
           "staged_folder", "write_atomic"]


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
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = share_like_umask(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        yield staging
        if before_swap is not None:
            before_swap()
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = folder.with_name(f"{staging.name}.old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(staging, folder)
    shutil.rmtree(old, ignore_errors=True)
