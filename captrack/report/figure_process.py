"""A leaderboard's figures drawn by a child process while the caller writes the pages.

Drawing a large board's figures is most of a core for several seconds (a 200-variant heatmap: matplotlib lays
out every tick label in each of its five draws), and writing the pages is another core's work that needs
nothing of the figures but their paths. With a second usable core the figures go to
``python -m captrack.report.figure_process JOB OUT`` (started by captrack.processes.spawn, so it dies with its
caller); on one core, or with CAPTRACK_WORKERS=1, they are drawn here. Either way the same functions of
captrack.report.figures draw them with the same settings, so the files are the same bytes.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captrack.errors import CaptrackError
from captrack.processes import captrack_child_env, die_with_parent, spawn, usable_cores

__all__ = ["FigureCall", "Figures", "draw_figures"]

FigureCall = tuple[str, tuple[Any, ...], dict[str, Any]]
"""One figure: the name of a function of captrack.report.figures, its arguments and keyword arguments."""


class Figures:
    """Figures being drawn (in a child process, or already drawn here); :meth:`paths` waits for them."""

    def __init__(self, calls: Sequence[FigureCall]) -> None:
        self._drawn: list[list[Path]] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        if not calls:
            self._drawn = []
        elif _in_child():
            self._tmp = tempfile.TemporaryDirectory(prefix="captrack-figures-")
            job, self._out, self._log = (Path(self._tmp.name) / name for name in ("job", "out", "log"))
            job.write_bytes(pickle.dumps(list(calls), protocol=pickle.HIGHEST_PROTOCOL))
            with self._log.open("wb") as log:
                self._process = spawn([sys.executable, "-m", __name__, str(job), str(self._out)],
                                      stdout=log, stderr=log, env=captrack_child_env())
        else:
            self._drawn = _draw(calls)

    def paths(self) -> list[list[Path]]:
        """The files each call wrote, in the calls' order (a failed drawing raised again here)."""
        if self._drawn is None:
            process = self._process
            assert process is not None
            try:
                code = process.wait()
                if code != 0 or not self._out.stat().st_size:
                    tail = self._log.read_text(errors="replace")[-2000:]
                    raise CaptrackError(f"the process drawing the leaderboard's figures failed (exit {code}); "
                                        f"its output ended:\n{tail}")
                found = pickle.loads(self._out.read_bytes())
                if isinstance(found, BaseException):
                    raise found
                self._drawn = found
            finally:
                self._tmp.cleanup()
        return self._drawn

    def close(self) -> None:
        """Stop a drawing still running (the caller failed before it asked for the paths)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
            self._tmp.cleanup()


def draw_figures(calls: Sequence[FigureCall]) -> Figures:
    """Start drawing `calls` (in a child process where a second core is usable)."""
    return Figures(calls)


def _in_child() -> bool:
    workers = os.environ.get("CAPTRACK_WORKERS", "").strip()
    if workers.isdigit() and int(workers) == 1:
        return False
    return usable_cores() > 1


def _draw(calls: Sequence[FigureCall]) -> list[list[Path]]:
    from captrack.report import figures

    return [getattr(figures, name)(*args, **kwargs) for name, args, kwargs in calls]


def _work(job: Path, out: Path) -> None:
    calls = pickle.loads(job.read_bytes())
    try:
        found: object = _draw(calls)
    except Exception as exc:  # raised again in the caller, as drawing there would have raised it
        found = exc
    out.write_bytes(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    die_with_parent()
    _work(Path(sys.argv[1]), Path(sys.argv[2]))
