"""`captrack run` stages for generations made elsewhere: build the data mirror, import a checkpoint's responses.

A checkpoint with ``import:`` is "evaluated" by `captrack import` (captrack.imports.import_run) into
``<workdir>/runs/<name>/seed<seed>``; the stage's key holds the source's SHA-256 and the mirror's
revisions, so a changed file or a rebuilt mirror imports again and anything else is reused.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError, UnknownNameError
from captrack.official.mirror import DATA_DIR_ENV, config_path
from captrack.pipeline.experiment import Checkpoint, Experiment
from captrack.pipeline.stage import Stage
from captrack.results.runfiles import results_files

__all__ = ["data_root", "data_stage", "import_stage", "validate_imports"]


def data_root(experiment: Experiment) -> Path | None:
    """The mirror the imports read: ``data.dir``, the run's own build (``data.sources``), else None ($CAPTRACK_DATA_DIR)."""
    if experiment.data_dir is not None:
        return experiment.data_dir
    return experiment.work.data if experiment.data_sources is not None else None


def validate_imports(experiment: Experiment) -> None:
    """Fail before any work on a missing source file, an unknown format or a missing data folder.

    Raises:
        InputError / UnknownNameError: naming the checkpoint, the path and the fix.
    """
    from captrack.imports.formats import ADAPTERS

    hint = "set CAPTRACK_SHARED to the folder holding data/ (or fix the path in the experiment)"
    for checkpoint in experiment.checkpoints:
        if not checkpoint.source:
            continue
        if checkpoint.source["format"] not in ADAPTERS:
            raise UnknownNameError(f"import format of checkpoint {checkpoint.name!r}", checkpoint.source["format"], ADAPTERS)
        if not Path(checkpoint.source["path"]).exists():
            raise InputError(f"{experiment.source}: checkpoint {checkpoint.name!r}: import path "
                             f"{checkpoint.source['path']} does not exist; {hint}")
    if experiment.data_sources is not None and not experiment.data_sources.is_dir():
        raise InputError(f"{experiment.source}: data.sources {experiment.data_sources} is not a folder of benchmark "
                         f"files; {hint}")
    if experiment.data_dir is not None and not experiment.data_dir.is_dir():
        raise InputError(f"{experiment.source}: data.dir {experiment.data_dir} does not exist; build it with "
                         "`captrack data build --sources DIR --out MIRROR` or use data: {sources: DIR, configs: [...]}")


def data_stage(experiment: Experiment) -> Stage:
    """Build ``data.configs`` from ``data.sources`` into ``<workdir>/data`` (`captrack data build`)."""
    from captrack.official.build import BUILDER_VERSION

    assert experiment.data_sources is not None  # plan() adds this stage only then
    sources, root, configs = experiment.data_sources, experiment.work.data, experiment.data_configs

    def action() -> None:
        from captrack.official.build import build_mirror

        failed = [f"{r.config}: {r.reason}" for r in build_mirror(sources, root, configs) if not r.built]
        if failed:
            raise InputError(f"could not build the data mirror {root} from {sources}: " + "; ".join(failed)
                             + " — check that the source files are there (set CAPTRACK_SHARED)")

    return Stage(f"build data mirror {', '.join(configs)} from {sources}", experiment.work.marker("data"),
                 {"sources": str(sources), "configs": list(configs), "builder": BUILDER_VERSION}, action,
                 produced=lambda: all(config_path(root, c).is_file() for c in configs))


@lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    from captrack.imports.run import source_sha256

    return source_sha256(Path(path))


def _source_sha(path: Path) -> str:
    if path.is_file():
        stat = path.stat()
        return _sha256(str(path), stat.st_size, stat.st_mtime_ns)
    from captrack.imports.run import source_sha256

    return source_sha256(path) if path.exists() else "missing"


def _mirror_state(root: Path | None) -> Any:
    """The mirror's per-config revisions (a rebuilt mirror imports again)."""
    manifest = (root or Path(os.environ.get(DATA_DIR_ENV, "-"))) / "manifest.json"
    return load_json(manifest.read_text(encoding="utf-8")).get("configs", {}) if manifest.is_file() else None


@contextmanager
def _data_env(root: Path | None) -> Iterator[None]:
    """$CAPTRACK_DATA_DIR pointed at `root` for the block (unchanged when None)."""
    before = os.environ.get(DATA_DIR_ENV)
    if root is not None:
        os.environ[DATA_DIR_ENV] = str(root)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DATA_DIR_ENV, None)
        else:
            os.environ[DATA_DIR_ENV] = before


def import_stage(experiment: Experiment, checkpoint: Checkpoint, seed: int) -> Stage:
    """`captrack import` of `checkpoint`'s generations into its run folder."""
    out = experiment.work.run(checkpoint.name, seed)
    spec, root = checkpoint.source, data_root(experiment)

    def action() -> None:
        from captrack.imports.run import import_run

        shutil.rmtree(out, ignore_errors=True)
        with _data_env(root):
            import_run(spec["path"], spec["format"], out, task=spec["task"], name=checkpoint.name,
                       allow_partial=spec["allow_partial"], log=print, metadata=experiment.metadata)

    def inputs() -> dict[str, Any]:
        """The import's configuration, the source's SHA-256 and the mirror's revisions."""
        return {"checkpoint": checkpoint.name, "import": spec, "sha256": _source_sha(Path(spec["path"])),
                "mirror": _mirror_state(root), "seed": seed} | ({"metadata": experiment.metadata} if experiment.metadata else {})

    return Stage(f"import {checkpoint.name} ({spec['format']}: {Path(spec['path']).name})",
                 experiment.work.marker(f"eval-{checkpoint.name}-{seed}"), inputs, action,
                 produced=lambda: any(results_files(out)))
