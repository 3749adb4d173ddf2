"""The one registry mechanism every captrack extension point uses: a typed table of named entries.

Each kind (scorers, metric specs, probe generators, import formats, judge backends, judge input builders,
judged metrics, instruction checks, official builders, `captrack run`'s executors) is one :class:`Registry`
instance. A name is registered once; an unknown name raises :class:`~captrack.errors.UnknownNameError`
listing the close ones. The modules that register entries are never listed by hand: a registry names the package to scan
and the line a registering module starts with (``@scorer(``, ``declare(``); the first lookup imports
every module of that package holding such a line. The registry module imports none of them, so
registering never needs an import circle, and a new module is found by being there.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from captrack.errors import CaptrackError, UnknownNameError

__all__ = ["Registry", "declared_names", "registering_modules"]

T = TypeVar("T")


def registering_modules(package: str, marker: str) -> list[str]:
    """The modules of `package` (its own files and sub-packages, not deeper) with a line that starts with `marker`, sorted by name.

    Reads the sources without importing them: a module is found by the text it holds, so one that
    registers nothing (or imports something heavy) is never imported by a lookup.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise CaptrackError(f"registry scan: {package!r} is not a package")
    pattern = re.compile(rf"^{re.escape(marker)}", re.M)
    found = []
    for location in spec.submodule_search_locations:
        for info in pkgutil.iter_modules([location]):
            folder = Path(location)
            source = folder / info.name / "__init__.py" if info.ispkg else folder / f"{info.name}.py"
            if source.is_file() and pattern.search(source.read_text(encoding="utf-8")):
                found.append(f"{package}.{info.name}")
    return sorted(found)


def declared_names(source: Path, decorator: str) -> list[str]:
    """The names a module registers with ``@<decorator>("name")`` lines, read from its source without importing it
    (for a command's --help, which must not import what the module imports)."""
    pattern = re.compile(rf"""^@{re.escape(decorator)}\(\s*["']([^"']+)["']""", re.M)
    return pattern.findall(source.read_text(encoding="utf-8"))


class Registry(Generic[T]):
    """A table of named entries of one kind.

    Args:
        kind: what an entry is, as error messages name it (``"scorer"``, ``"import format"``).
        scan: the package whose modules register entries (None: entries are added where the registry lives).
        marker: the start of a line that marks a registering module (``"@scorer("``); needed with `scan`.
    """

    def __init__(self, kind: str, scan: str | None = None, marker: str | None = None) -> None:
        if (scan is None) != (marker is None):
            raise CaptrackError(f"registry {kind!r}: give scan and marker together")
        self.kind = kind
        self.scan = scan
        self.marker = marker
        self._entries: dict[str, T] = {}
        self._loaded = scan is None

    def add(self, name: str, value: T) -> T:
        """Register `value` under `name` and return it.

        Raises:
            CaptrackError: `name` is already registered (the first entry stays).
        """
        if name in self._entries:
            raise CaptrackError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = value
        return value

    def register(self, *names: str) -> Callable[[T], T]:
        """A decorator registering the decorated object under each of `names`."""

        def decorate(value: T) -> T:
            for name in names:
                self.add(name, value)
            return value

        return decorate

    def load(self) -> None:
        """Import every registering module of the scanned package, once (nothing to do without a scan)."""
        if self._loaded or self.scan is None or self.marker is None:
            return
        self._loaded = True  # before importing: a module that looks an entry up while loading must not recurse
        try:
            for module in registering_modules(self.scan, self.marker):
                importlib.import_module(module)
        except BaseException:
            self._loaded = False
            raise

    def get(self, name: str) -> T:
        """The entry registered under `name`.

        Raises:
            UnknownNameError: no such entry (the close names, or the known ones, are listed).
        """
        self.load()
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(self.kind, name, self._entries) from None

    def names(self) -> list[str]:
        """Every registered name, in registration order."""
        self.load()
        return list(self._entries)

    def entries(self) -> dict[str, T]:
        """A copy of the table, by name."""
        self.load()
        return dict(self._entries)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {len(self._entries)} entries)"
