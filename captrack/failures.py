"""One-line messages for the failures a user can cause or meet (a full disk, a missing or unreadable
file, bytes that are not UTF-8, a zip that is no zip, a malformed CSV or Parquet file, any DuckDB
error, input nested too deeply): `captrack` prints these instead of a traceback. Anything else is a
bug and keeps its traceback.
"""

from __future__ import annotations

import csv
import errno
import zipfile

from captrack.errors import FILE_NOTE

__all__ = ["failure_message"]

_HINTS = {
    errno.ENOSPC: "free some disk space and run the command again (finished work is reused)",
    errno.EDQUOT: "free some space under your quota and run the command again",
    errno.EACCES: "check the file's permissions",
    errno.EPERM: "check the file's permissions",
    errno.ELOOP: "a symbolic link points back into itself; fix or remove it",
    errno.EISDIR: "give a file, not a folder",
    errno.ENOTDIR: "a path component is a file where a folder is expected",
    errno.ENOENT: "check the path",
    errno.EROFS: "the file system is read-only; write somewhere else",
}


def _os_message(exc: OSError) -> str:
    where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
    what = exc.strerror or str(exc)
    hint = _HINTS.get(exc.errno or 0, "")
    return f"{where + ': ' if where else ''}{what}" + (f"; {hint}" if hint else "")


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from or during, outermost first."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def _named_file(chain: list[BaseException]) -> str:
    """``FILE: `` for the file a note on the error names (captrack.errors.FILE_NOTE), else empty."""
    for item in chain:
        for note in getattr(item, "__notes__", ()):
            if isinstance(note, str) and note.startswith(FILE_NOTE):
                return note[len(FILE_NOTE):] + ": "
    return ""


def failure_message(exc: BaseException) -> str | None:
    """The one-line message for `exc`, or None when it is not a failure a user can act on (a bug)."""
    chain = _chain(exc)
    for item in chain:  # the file an OSError names is the most useful thing to say
        if isinstance(item, OSError) and item.filename is not None:
            return _os_message(item)
    module = type(exc).__module__.split(".")[0].lstrip("_")  # DuckDB's errors live in `_duckdb`
    text = " ".join(str(exc).split())[:500]
    where = _named_file(chain)
    if isinstance(exc, RecursionError):
        return f"{where}the input is nested too deeply to read ({text}); check that it is the right file"
    if isinstance(exc, UnicodeError):
        return f"a file is not UTF-8 text ({text}); convert it to UTF-8 or check that it is the right file"
    if isinstance(exc, zipfile.BadZipFile):
        return f"a .zip file is not a readable zip archive ({text}); check the download"
    if isinstance(exc, csv.Error):
        return f"a CSV file is malformed ({text}); check its quoting and field sizes"
    if module == "pyarrow":
        return f"a Parquet/Arrow file could not be read ({text}); check that it is complete"
    if module == "duckdb":
        return (f"{where or 'the DuckDB store: '}DuckDB failed ({text}); if the disk is full, free space and run the "
                "command again; if the store is damaged, restore it or ingest the runs into a new store")
    if isinstance(exc, OSError):
        return _os_message(exc)
    return None
