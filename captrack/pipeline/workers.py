"""What the run shows of its stage workers: their log files' latest progress line, last lines and warnings.

On a CPU the stages of `captrack run` that do not depend on each other — the three trainings, then the
four evaluations — run in as many worker processes as there are usable cores (captrack.processes.worker_count),
each with a share of the free cores as torch threads. A 135M model's small matrix products scale poorly
from one thread to two (a decode step: 206 ms on one thread, 132 ms on two), so two single-threaded workers
finish more work than one two-threaded process; and on a shared machine a single-threaded worker never waits
at a barrier for a thread the scheduler has parked. Each worker (``python -m captrack.pipeline.stage_job
SPEC``, placed by an executor: captrack.pipeline.executors) writes its output to ``<workdir>/logs/<stage>.log``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["PROGRESS_EVERY_S", "latest_line", "log_tail", "show_stage_warnings", "slug", "stage_warnings"]

PROGRESS_EVERY_S = 20.0
"""How often the run shows each running job's latest progress line (its log's last line)."""

_PROGRESS = re.compile(r"\b\d+/\d+\b|\d+%\|")
_WARNING = re.compile(r"\bWARNING\b|\bwarn(?:ing)?s?\.warn|\w+Warning:")


def slug(title: str) -> str:
    """A stage title as a file name: ``evaluate base (seed 0)`` -> ``evaluate-base-seed-0``."""
    return re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()


def latest_line(log: Path) -> str:
    """The stage's latest progress line in `log` (a training step, a requests bar; tqdm redraws with carriage
    returns), never a warning; "starting" until the stage printed one (or while its log is not there)."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 16384))
            tail = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return "starting"
    parts = [p.strip() for p in re.split(r"[\r\n]+", tail) if p.strip()]
    progress = [p for p in parts if _PROGRESS.search(p) and not _WARNING.search(p)]
    return progress[-1][:160] if progress else "starting"


def log_tail(log: Path, lines: int = 15) -> str:
    """The last `lines` lines of `log` ("(no log)" when it cannot be read)."""
    try:
        return "\n".join(log.read_text(errors="replace").strip().splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stage_warnings(logs: list[Path]) -> list[str]:
    """The distinct warning lines of worker logs, in first-seen order, timestamps and source locations dropped."""
    seen: dict[str, None] = {}
    for log in logs:
        for line in log.read_text(errors="replace").splitlines():
            if _WARNING.search(line):
                text = re.sub(r"^\S+ WARNING\s+\[[^\]]*\]\s*", "", line.strip())
                seen.setdefault(text[:300], None)
    return list(seen)


def show_stage_warnings(logs: list[Path], console: Console) -> None:
    """Each distinct warning of these worker logs not shown before in this process, once."""
    from rich.markup import escape

    from captrack.lmeval.quiet import mark_shown, shown_warnings

    shown = shown_warnings()
    found = [w for w in stage_warnings(logs) if w not in shown]
    mark_shown(found)
    if found:
        folder = logs[0].parent
        console.print(f"[yellow]{len(found)} warning(s) from these stages, each shown once per run (full logs in "
                      f"{escape(str(folder))}):[/]")
        for warning in found[:20]:
            console.print(f"[dim]  {escape(warning)}[/]", highlight=False)
