"""Helpers for the probe tests: each probe task folder's YAML, hooks (utils.py) and generated docs."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from captrack.paths import tasks_dir

PROBE_FOLDERS = sorted(p.name for p in Path(tasks_dir()).glob("probe_*") if p.is_dir())


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: f"!function {loader.construct_scalar(node)}")


@cache
def task_config(folder: str) -> dict[str, Any]:
    """The task YAML of a probe folder (``!function`` values kept as text)."""
    path = Path(tasks_dir()) / folder / f"{folder}.yaml"
    return dict(yaml.load(path.read_text(), Loader=_Loader))


@cache
def hooks(folder: str) -> ModuleType:
    """The folder's utils.py, imported under a unique module name."""
    path = Path(tasks_dir()) / folder / "utils.py"
    spec = importlib.util.spec_from_file_location(f"_probe_hooks_{folder}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hooks_source(folder: str) -> str:
    """The text of a probe folder's utils.py."""
    return (Path(tasks_dir()) / folder / "utils.py").read_text()


def docs(folder: str, seed: int, n: int | None = None) -> list[dict[str, Any]]:
    """The docs the task's custom_dataset hook builds for `seed` (and `n`, default: the YAML's)."""
    metadata = dict(task_config(folder)["metadata"]) | {"seed": seed}
    if n is not None:
        metadata["n"] = n
    return list(hooks(folder).load(**metadata)["test"])
