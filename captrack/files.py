"""Writing files so that a reader never sees half of one (or half a folder): temp beside the target, then rename."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["staged_folder", "write_atomic"]


def write_atomic(path: Path, text: str) -> Path:
    """Write `text` to a temp file beside `path`, then rename it into place; returns `path`."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
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
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
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
