"""captrack's exceptions: every one says what went wrong and what to do about it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["FILE_NOTE", "CaptrackError", "DataUnavailableError", "InputError", "MismatchError", "UnknownNameError",
           "close_matches"]

FILE_NOTE = "captrack file: "
"""The start of the note (``exc.add_note``) that names the file an error of a library (DuckDB) was about."""


class CaptrackError(Exception):
    """Base class of errors captrack reports to users (the CLI prints them without a traceback)."""


class InputError(CaptrackError):
    """A file or argument given by the user cannot be used as it is."""


class MismatchError(CaptrackError):
    """Base and variant runs do not cover the same items, so they cannot be paired."""


def close_matches(name: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    """Return up to `n` candidates that look like `name` (case-insensitive)."""
    pool = {c.lower(): c for c in candidates}
    hits = difflib.get_close_matches(name.lower(), list(pool), n=n, cutoff=0.5)
    return [pool[h] for h in hits]


class UnknownNameError(CaptrackError, KeyError):
    """A task, metric, capability or registry entry that does not exist."""

    def __init__(self, kind: str, name: str, candidates: Iterable[str]) -> None:
        known = sorted(set(candidates))
        hints = close_matches(name, known)
        message = f"unknown {kind} {name!r}"
        if hints:
            message += f"; did you mean {', '.join(repr(h) for h in hints)}?"
        elif known:
            shown = ", ".join(known[:12]) + (" ..." if len(known) > 12 else "")
            message += f"; known: {shown}"
        super().__init__(message)
        self.kind = kind
        self.name = name
        self.suggestions = hints

    def __str__(self) -> str:
        return str(self.args[0])

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled (raised in a worker process) as its message and fields: its arguments are not kept."""
        return (_unknown_name, (str(self.args[0]), self.kind, self.name, list(self.suggestions)))


def _unknown_name(message: str, kind: str, name: str, suggestions: list[str]) -> UnknownNameError:
    error = UnknownNameError.__new__(UnknownNameError)
    CaptrackError.__init__(error, message)
    error.kind, error.name, error.suggestions = kind, name, suggestions
    return error


class DataUnavailableError(InputError):
    """An official CapTrack task's data is neither in a local mirror nor reachable on the hub."""
