"""Builders of the CapTrack mirror from the benchmarks' original public files, one per config.

A builder is ``(sources: Path, config: OfficialConfig) -> rows``: it reads the original files under
``sources`` (laid out as in the team's shared data folder: ``gsm8k/test.jsonl``, ``mmlu_pro/test.jsonl``,
...), draws the config's deterministic sample and returns rows with the mirror's fields.
"""

from __future__ import annotations

import csv
import json
import random
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from captrack.official.configs import OfficialConfig
from captrack.registries import Registry

__all__ = ["BUILDERS", "Builder", "builder", "get_builders", "letters", "read_csv", "read_json", "read_jsonl", "sample"]

Row = dict[str, Any]
Builder = Callable[[Path, OfficialConfig], list[Row]]
T = TypeVar("T")
BUILDERS: Registry[Builder] = Registry("official builder", scan="captrack.official.sources", marker="@builder(")
"""The builder of each config; a module here with a line starting ``@builder(`` is loaded on first use."""


def builder(*configs: str) -> Callable[[Builder], Builder]:
    """Register a builder for one or more configs."""

    return BUILDERS.register(*configs)


def get_builders() -> dict[str, Builder]:
    """Every registered builder, by config name."""
    return BUILDERS.entries()


def sample(items: Sequence[T], size: int | None, seed: int) -> list[T]:
    """A deterministic sample of `size` items in their original order (all items when size is None)."""
    if size is None or size >= len(items):
        return list(items)
    picked = sorted(random.Random(seed).sample(range(len(items)), size))
    return [items[i] for i in picked]


def letters(n: int) -> list[str]:
    """Option letters A, B, C, ... for n options."""
    return [chr(ord("A") + i) for i in range(n)]


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"source file {path} is missing")
    return path


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSON Lines file."""
    with _need(path).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_json(path: Path) -> Any:
    """A JSON file."""
    return json.loads(_need(path).read_text(encoding="utf-8"))


def read_csv(path: Path, fieldnames: Iterable[str] | None = None, delimiter: str = ",",
             quoting: Any = csv.QUOTE_MINIMAL) -> list[dict[str, str]]:
    """Rows of a CSV/TSV file (a UTF-8 BOM is dropped)."""
    with _need(path).open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, fieldnames=list(fieldnames) if fieldnames else None,
                                delimiter=delimiter, quoting=quoting)
        return [dict(r) for r in reader]
