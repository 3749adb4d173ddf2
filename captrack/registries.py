"""The one rule every captrack registry shares: a name is registered once."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TypeVar

from captrack.errors import CaptrackError

__all__ = ["add_once"]

V = TypeVar("V")


def add_once(table: MutableMapping[str, V], name: str, value: V, what: str) -> None:
    """Put `value` in `table` under `name`; a second registration of `name` is a programming error.

    Raises:
        CaptrackError: `name` is already in `table` (`what` says which registry, e.g. "scorer").
    """
    if name in table:
        raise CaptrackError(f"{what} {name!r} is registered twice")
    table[name] = value
