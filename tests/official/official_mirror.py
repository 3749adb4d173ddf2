"""Helpers for the official-suite tests: the shared data folder, a built mirror, the example rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from shared_paths import shared_dir

from captrack.official.build import BuildResult, build_mirror
from captrack.official.mirror import normalise_row, write_config

EXAMPLES = Path(__file__).with_name("official_examples.yaml")


def shared_data() -> Path | None:
    """The original benchmark files (``<shared>/data``), or None when this machine has none."""
    folder = shared_dir() / "data"
    return folder if (folder / "SOURCES.md").is_file() else None


def examples() -> list[dict[str, Any]]:
    """The hand-written example rows of the configs that cannot be built offline."""
    loaded: list[dict[str, Any]] = yaml.safe_load(EXAMPLES.read_text(encoding="utf-8"))
    return loaded


def write_examples(root: Path) -> None:
    """Write each example row as its config's only row in the mirror at `root`."""
    for case in examples():
        row = normalise_row(case["row"], case["config"])
        row["revision"] = "example-1"
        write_config(root, case["config"], [row])


def full_mirror(root: Path) -> list[BuildResult]:
    """Build every buildable config from the shared data (when present), then add the example rows."""
    source = shared_data()
    results = build_mirror(source, root) if source else []
    write_examples(root)
    return results
