"""lm-eval's warnings once per process, and none of the advice that does not apply to captrack's tasks.

Every captrack task loads its data through ``custom_dataset`` (one code path for the hub and a mirror),
so lm-eval warns "<task>: Custom kwargs can be passed to `--metadata`" for each task each time a task
is loaded: 20 to 45 lines per stage that say nothing about the run. Any other warning from lm-eval's
loggers is shown the first time and dropped when repeated word for word.

lm-eval also records the git commit of the folder it runs in (``git describe --always``) and lets git's
stderr through: outside a git repository every evaluation and `captrack import` printed ``fatal: not a git
repository``. :func:`quiet_lm_eval` makes that probe quiet; the results' ``git_hash`` is what it was.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
from typing import Any

__all__ = ["OnceFilter", "git_commit_quietly", "mark_shown", "quiet_lm_eval", "shown_warnings"]

_NOT_FOR_CAPTRACK = re.compile(r"^captrack_\w+: Custom kwargs can be passed to `--metadata`")


class OnceFilter(logging.Filter):
    """Pass a warning the first time its logger and text are seen; drop lm-eval's custom_dataset advice on our tasks."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        text = record.getMessage()
        if _NOT_FOR_CAPTRACK.match(text):
            return False
        key = (record.name, text)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


_FILTER = OnceFilter()


def quiet_lm_eval() -> None:
    """Put the filter on every lm-eval logger that exists now and make lm-eval's git probe quiet (idempotent; call after
    importing lm-eval)."""
    names = ["lm_eval", "lm_eval.api.task", "lm_eval.evaluator"]
    names += [n for n in logging.Logger.manager.loggerDict if n.startswith("lm_eval.")]
    for name in dict.fromkeys(names):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    for module in ("lm_eval.loggers.utils", "lm_eval.evaluator"):  # the evaluator holds its own reference
        loaded = sys.modules.get(module)
        if loaded is not None and hasattr(loaded, "get_git_commit_hash"):
            setattr(loaded, "get_git_commit_hash", git_commit_quietly)  # noqa: B010  (an attribute mypy cannot see)


def git_commit_quietly() -> Any:
    """lm-eval's ``get_git_commit_hash`` (0.4.13) with git's stderr dropped: ``git describe --always`` in the current
    folder, else the commit read from a ``.git`` folder above it, else None."""
    try:
        found = subprocess.check_output(["git", "describe", "--always"], stderr=subprocess.DEVNULL)
        return found.strip().decode()
    except (subprocess.CalledProcessError, OSError):
        from lm_eval.loggers.utils import get_commit_from_path

        return get_commit_from_path(os.getcwd())


def shown_warnings() -> set[str]:
    """The warning texts this process has already let through (so a run's summary does not repeat them)."""
    return {text for _, text in _FILTER.seen}


def mark_shown(texts: list[str]) -> None:
    """Record warnings shown another way (a worker's log summarised by the parent), so they are not shown again."""
    _FILTER.seen.update(("(shown)", text) for text in texts)
