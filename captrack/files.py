"""Writing files so that a reader never sees half of one (or half a folder): temp beside the target, then rename."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["default_mode", "share_like_umask", "staged_folder", "write_atomic"]


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (/proc), else set and restored at once."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def default_mode(directory: bool = False) -> int:
    """The mode `open()`/`mkdir()` would give a new file (0o666) or folder (0o777) under the umask: 0644/0755 at 022."""
    return (0o777 if directory else 0o666) & ~_umask()


def share_like_umask(path: Path | str) -> Path:
    """Give a file or folder made by tempfile (always 0600/0700) the mode a plain create would have; returns it.

    tempfile's private modes are right for scratch space but wrong for anything published by rename:
    a leaderboard served by a web server or a comparison shared with a team must be readable like any
    other file the user writes.
    """
    target = Path(path)
    os.chmod(target, default_mode(directory=target.is_dir()))
    return target


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to a temp file beside `path`, then rename it into place; returns `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, default_mode())  # mkstemp's 0600 would outlive the rename
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_OUTPUT_SUFFIXES = (".csv", ".json", ".md")


@contextlib.contextmanager
def staged_folder(folder: Path) -> Iterator[Path]:
    """Yield an empty temp folder beside `folder`; on success it replaces `folder` whole, on error it is removed.

    A reader sees the old folder or the new one, never a mix (the swap is two renames).

    Raises:
        InputError: `folder` exists and holds something other than output files (.csv, .json, .md),
            which replacing it would delete.
    """
    from captrack.errors import InputError

    if folder.exists():
        if not folder.is_dir():
            raise InputError(f"--out {folder} is a file; give a folder")
        foreign = sorted(p.name for p in folder.iterdir() if p.is_dir() or p.suffix not in _OUTPUT_SUFFIXES)
        if foreign:
            raise InputError(f"--out {folder} holds {', '.join(foreign[:5])}, which are not comparison outputs; "
                             "give a new or empty folder (the whole folder is replaced)")
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = share_like_umask(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    old = folder.with_name(f"{staging.name}.old")
    if folder.exists():
        os.replace(folder, old)
    os.replace(staging, folder)
    shutil.rmtree(old, ignore_errors=True)
