"""Let stock lm-eval (``lm_eval --tasks 'captrack_*'``, ``lm_eval ls tasks``) see captrack's tasks.

lm-eval 0.4.13 reads no plugin entry points, so ``pip install captrack`` also installs
``captrack-lmeval-hook.pth``, whose one line runs :func:`install` at interpreter start. ``install``
only puts a finder on ``sys.meta_path`` (no lm_eval, torch or captrack import: it costs one string
comparison per import). When lm-eval's own modules are first imported, it patches three things:
``TaskManager`` gets captrack's task folder on its include path; the CLI's task selection
(``EvaluatorConfig.process_tasks``) resolves captrack model aliases in ``--model_args pretrained=``
(``smollm2-135m-instruct`` becomes its local folder), names unknown tasks with close matches, and checks,
before any model is loaded, that every selected official CapTrack task can read its data
(captrack/lmeval/preflight.py); and ``lm_eval``'s CLI prints
captrack's errors as one line (exit status 2) instead of a traceback. A folder already holding captrack's tasks (the same
folder, or a checkout's ``tasks/`` passed with ``--include_path``) is not added twice, so
``captrack-eval`` and ``--include_path`` keep working without lm-eval's override warnings.
An ``--include_path`` string may list several folders separated by ``os.pathsep``.

Set ``CAPTRACK_LMEVAL_HOOK=0`` to turn the hook off (lm-eval then sees only what it is told).

The hook fails open: when the captrack package is gone (uninstalled beside a stale .pth) or a patch
does not fit the lm-eval installed, lm-eval runs untouched and nothing is printed; the .pth line
itself ignores a missing hook module.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing is not imported at interpreter start: it would cost every Python process ~15 ms
if TYPE_CHECKING:
    from typing import Any

__all__ = ["ENV_VAR", "install", "with_captrack_tasks"]

ENV_VAR = "CAPTRACK_LMEVAL_HOOK"
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
    """`include_path` as a list without repeats, captrack's task folder first unless one already holds its tasks."""
    paths: list[Any] = []
    seen: set[str] = set()
    for path in _split(include_path):  # the same folder twice makes lm-eval warn once per task
        key = os.path.realpath(os.fspath(path))
        if key not in seen:
            seen.add(key)
            paths.append(path)
    if any(os.path.isfile(os.path.join(os.fspath(p), _MARKER)) for p in paths):
        return paths
    from captrack.paths import tasks_dir

    return [tasks_dir(), *paths]  # first, so a user's own copy of a task overrides ours


def _captrack_tasks(include_path: Any) -> Any:
    """`with_captrack_tasks`, or `include_path` unchanged when captrack cannot be imported (fail open)."""
    try:
        return with_captrack_tasks(include_path)
    except ImportError:
        return include_path


def _patch_manager(module: Any) -> None:
    """Wrap ``TaskManager.__init__`` so every TaskManager sees captrack's tasks (once per class)."""
    cls = module.TaskManager
    original = cls.__init__
    if getattr(original, "_captrack_hook", False):
        return

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if _enabled():
            if len(args) >= 2:  # TaskManager(verbosity, include_path, ...)
                args = (args[0], _captrack_tasks(args[1]), *args[2:])
            else:
                kwargs["include_path"] = _captrack_tasks(kwargs.get("include_path"))
        original(self, *args, **kwargs)

    __init__._captrack_hook = True  # type: ignore[attr-defined]
    __init__.__doc__ = original.__doc__
    cls.__init__ = __init__


def _patch_config(module: Any) -> None:
    """Wrap the CLI's ``process_tasks`` so missing CapTrack data stops the run before the model loads."""
    cls = module.EvaluatorConfig
    original = cls.process_tasks
    if getattr(original, "_captrack_hook", False):
        return

    def process_tasks(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not _enabled():
            return original(self, *args, **kwargs)
        try:
            import lm_eval.api.task  # noqa: F401  (its logger, filtered next)

            from captrack.lmeval import preflight
            from captrack.lmeval.quiet import quiet_lm_eval
        except ImportError:  # captrack is gone: lm-eval as it is
            return original(self, *args, **kwargs)
        quiet_lm_eval()  # no "<task>: Custom kwargs can be passed to `--metadata`" per captrack task
        self.model_args = preflight.resolve_model_aliases(self.model_args)  # before lm-eval builds the model
        try:
            manager = original(self, *args, **kwargs)
        except ValueError as exc:
            if not str(exc).startswith("Tasks not found:"):
                raise
            raise preflight.unknown_tasks_error(str(exc), getattr(self, "include_path", None), self.metadata) from None
        preflight.check_task_data(manager, self.tasks if isinstance(self.tasks, list) else [], self.metadata)
        return manager

    process_tasks._captrack_hook = True  # type: ignore[attr-defined]
    cls.process_tasks = process_tasks


def _is_captrack_error(exc: BaseException) -> bool:
    return any(c.__name__ == "CaptrackError" and c.__module__ == "captrack.errors" for c in type(exc).__mro__)


def _patch_main(module: Any) -> None:
    """Make lm-eval's CLI print captrack's errors (they name the fix) as one line, exit status 2."""
    original = module.cli_evaluate
    if getattr(original, "_captrack_hook", False):
        return

    def cli_evaluate(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except Exception as exc:
            if not _is_captrack_error(exc):
                raise
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            raise SystemExit(2) from None

    cli_evaluate._captrack_hook = True  # type: ignore[attr-defined]
    module.cli_evaluate = cli_evaluate


_PATCHES = {
    "lm_eval.tasks.manager": _patch_manager,
    "lm_eval.config.evaluate_config": _patch_config,
    "lm_eval.__main__": _patch_main,
}


class _Loader:
    """Runs lm-eval's own loader, then patches the module it produced."""

    def __init__(self, loader: Any, patch: Any) -> None:
        self._loader = loader
        self._patch = patch

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        try:
            self._patch(module)
        except Exception:  # an lm-eval whose classes moved: leave it untouched rather than break it
            pass

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... for tools that ask
        return getattr(self._loader, name)


class _Finder:
    """A meta-path finder that answers only for the lm-eval modules in ``_PATCHES``."""

    _captrack_hook = True

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        patch = _PATCHES.get(name)
        if patch is None or not _enabled():
            return None
        spec = None
        for finder in sys.meta_path:  # whichever finder would have found lm-eval (site-packages, editable, ...)
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader, patch)  # type: ignore[assignment]
        return spec


def install() -> None:
    """Put the finder on ``sys.meta_path`` (idempotent; patches at once what lm-eval already imported)."""
    if not _enabled():
        return
    if not any(getattr(f, "_captrack_hook", False) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        loaded = sys.modules.get(name)
        if loaded is not None:
            try:
                patch(loaded)
            except Exception:  # fail open, as in _Loader.exec_module
                pass
