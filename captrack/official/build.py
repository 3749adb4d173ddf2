"""Build the CapTrack mirror offline from the benchmarks' original public files."""

from __future__ import annotations

import csv
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from captrack.errors import InputError
from captrack.official.configs import CONFIGS, OfficialConfig
from captrack.official.mirror import (
    content_revision,
    normalise_row,
    read_manifest,
    write_config,
    write_manifest,
)
from captrack.official.sources import Builder, get_builders

__all__ = ["BUILDER_VERSION", "BuildResult", "build_mirror"]

BUILDER_VERSION = "b1"


@dataclass(frozen=True)
class BuildResult:
    """What happened to one config: built (rows, revision) or not (reason)."""

    config: str
    rows: int = 0
    revision: str = ""
    reason: str = ""

    @property
    def built(self) -> bool:
        """Whether the config's rows were written."""
        return not self.reason


def build_mirror(sources: str | Path, out: str | Path, configs: Iterable[str] | None = None,
                 progress: Callable[[str], None] | None = None, full: bool = False) -> list[BuildResult]:
    """Build every config the files under `sources` can feed; report the others and why.

    Args:
        sources: folder of original benchmark files (laid out as ``gsm8k/test.jsonl``, ...).
        out: the mirror root (``<out>/data/<config>/data.parquet`` and ``<out>/manifest.json``).
        configs: only these configs (default: every config, the hub's 37 and captrack's own).
        progress: called with each config name before it is built.
        full: also build each sampled config from every row of its source, as subset ``full``
            (task metadata ``{"subset": "full"}``); reported as ``<config> (full)``.

    Raises:
        InputError: `sources` is not a folder, or an unknown config is asked for.
    """
    source_dir, root = Path(sources), Path(out)
    if not source_dir.is_dir():
        raise InputError(f"--sources {source_dir} is not a folder of benchmark files")
    wanted = list(configs) if configs else list(CONFIGS)
    unknown = [c for c in wanted if c not in CONFIGS]
    if unknown:
        raise InputError(f"unknown config(s) {unknown}; known: {', '.join(CONFIGS)}")
    builders = get_builders()
    results = []
    for name in wanted:
        if progress:
            progress(name)
        results.append(_build_one(source_dir, root, CONFIGS[name], builders))
        if full and CONFIGS[name].size is not None and results[-1].built:
            whole = _build_one(source_dir, root, replace(CONFIGS[name], size=None), builders, "full")
            results.append(replace(whole, config=f"{name} (full)"))
    entries = read_manifest(root).get("configs", {}) if root.is_dir() else {}
    entries |= {r.config: {"rows": r.rows, "revision": r.revision, "reason": r.reason} for r in results}
    write_manifest(root, {
        "source": "build",
        "builder_version": BUILDER_VERSION,
        "sources": str(source_dir.resolve()),
        "configs": entries,
    })
    return results


def _build_one(sources: Path, root: Path, config: OfficialConfig, builders: dict[str, Builder], subset: str = "sample") -> BuildResult:
    if config.reason:
        return BuildResult(config.name, reason=config.reason)
    try:
        rows = [normalise_row(r, config.name) for r in builders[config.name](sources, config)]
    except (OSError, KeyError, ValueError, IndexError, TypeError, AttributeError, csv.Error, zipfile.BadZipFile,
            InputError) as exc:  # one malformed source fails its config, never the whole build
        return BuildResult(config.name, reason=f"source files unusable: {type(exc).__name__}: {exc}")
    if not rows:
        return BuildResult(config.name, reason="the sources gave no rows")
    revision = content_revision(rows, BUILDER_VERSION)
    for row in rows:
        row["revision"] = revision
    write_config(root, config.name, rows, subset)
    return BuildResult(config.name, rows=len(rows), revision=revision)
