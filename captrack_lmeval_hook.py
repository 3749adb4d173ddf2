"""Let stock lm-eval (``lm_eval --tasks 'captrack_*'``, ``lm_eval ls tasks``) see captrack's tasks.

lm-eval 0.4.13 reads no plugin entry points, so ``pip install captrack`` also installs
``captrack-lmeval-hook.pth``, whose one line runs :func:`install` at interpreter start. ``install``
only puts a finder on ``sys.meta_path`` (no lm_eval, torch or captrack import: it costs one string
comparison per import); when ``lm_eval.tasks.manager`` is first imported, its ``TaskManager`` gets
captrack's task folder on its include path. A folder already holding captrack's tasks (the same
folder, or a checkout's ``tasks/`` passed with ``--include_path``) is not added twice, so
``captrack-eval`` and ``--include_path`` keep working without lm-eval's override warnings.
An ``--include_path`` string may list several folders separated by ``os.pathsep``.

Set ``CAPTRACK_LMEVAL_HOOK=0`` to turn the hook off (lm-eval then sees only what it is told).
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["ENV_VAR", "install", "with_captrack_tasks"]

ENV_VAR = "CAPTRACK_LMEVAL_HOOK"
_TARGET = "lm_eval.tasks.manager"
_MARKER = os.path.join("probe_c1_facts", "probe_c1_facts.yaml")  # a folder holding captrack's tasks has it


def _enabled() -> bool:
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "no", "off")


def _split(include_path: Any) -> list[Any]:
    """lm-eval's include_path (None, a path, an os.pathsep list in one string, or a list) as a list."""
    if include_path is None:
        return []
    if isinstance(include_path, (list, tuple)):
        return list(include_path)
    if isinstance(include_path, str):
        return [p for p in include_path.split(os.pathsep) if p]
    return [include_path]


def with_captrack_tasks(include_path: Any) -> Any:
    """`include_path` with captrack's task folder first, unless it already holds captrack's tasks."""
    paths = _split(include_path)
    if any(os.path.isfile(os.path.join(os.fspath(p), _MARKER)) for p in paths):
        return paths or include_path
    from captrack.paths import tasks_dir

    return [tasks_dir(), *paths]  # first, so a user's own copy of a task overrides ours


def _patch(module: Any) -> None:
    """Wrap ``TaskManager.__init__`` so every TaskManager sees captrack's tasks (once per class)."""
    cls = module.TaskManager
    original = cls.__init__
    if getattr(original, "_captrack_hook", False):
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _enabled():
            if len(args) >= 2:  # TaskManager(verbosity, include_path, ...)
                args = (args[0], with_captrack_tasks(args[1]), *args[2:])
            else:
                kwargs["include_path"] = with_captrack_tasks(kwargs.get("include_path"))
        original(self, *args, **kwargs)

    __init__._captrack_hook = True  # type: ignore[attr-defined]
    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__


class _Loader:
    """Runs lm-eval's own loader, then patches the module it produced."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        _patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... for tools that ask
        return getattr(self._loader, name)


class _Finder:
    """A meta-path finder that answers only for ``lm_eval.tasks.manager``."""

    _captrack_hook = True

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != _TARGET or not _enabled():
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Put the finder on ``sys.meta_path`` (idempotent; patches at once if lm-eval is already imported)."""
    if not _enabled():
        return
    if any(getattr(f, "_captrack_hook", False) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _Finder())
    loaded = sys.modules.get(_TARGET)
    if loaded is not None:
        _patch(loaded)
