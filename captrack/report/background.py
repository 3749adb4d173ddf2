"""Parts of a leaderboard made by a child process while the caller writes the rest: its figures and task pages.

Drawing a large board's figures is most of a core for several seconds (a 200-variant heatmap: matplotlib lays
out every tick label in each of its five draws), and so is rendering its task pages (tens of thousands of
flipped items); the index, README and tables need nothing of them but their names. With a second usable core
they go to ``python -m captrack.report.background JOB OUT`` (started by captrack.processes.spawn, so it dies
with its caller), which runs the calls in order and sends back what each returned; on one core, or with
CAPTRACK_WORKERS=1, they run here. Either way the same functions run on the same inputs, so the outputs are
the same bytes.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from captrack.errors import CaptrackError
from captrack.processes import captrack_child_env, die_with_parent, spawn, usable_cores

__all__ = ["Background", "Call", "in_background"]

Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
"""One call: a module-level function (sent to the child by its name, as pickle does), its arguments and keyword
arguments."""


class Background:
    """Calls being run (in a child process, or already run here); :meth:`results` waits for them."""

    def __init__(self, calls: Sequence[Call]) -> None:
        self._results: list[Any] | None = None
        self._process: subprocess.Popen[bytes] | None = None
        if not calls:
            self._results = []
        elif _in_child():
            self._tmp = tempfile.TemporaryDirectory(prefix="captrack-background-")
            job, self._out, self._log = (Path(self._tmp.name) / name for name in ("job", "out", "log"))
            job.write_bytes(pickle.dumps(list(calls), protocol=pickle.HIGHEST_PROTOCOL))
            with self._log.open("wb") as log:
                self._process = spawn([sys.executable, "-m", __name__, str(job), str(self._out)],
                                      stdout=log, stderr=log, env=captrack_child_env())
        else:
            self._results = _run(calls)

    def results(self) -> list[Any]:
        """What each call returned, in the calls' order (an exception one raised is raised again here)."""
        if self._results is None:
            process = self._process
            assert process is not None
            try:
                code = process.wait()
                if code != 0 or not self._out.stat().st_size:
                    tail = self._log.read_text(errors="replace")[-2000:]
                    raise CaptrackError(f"the process making the leaderboard's figures and task pages failed (exit {code}); "
                                        f"its output ended:\n{tail}")
                found = pickle.loads(self._out.read_bytes())
                if isinstance(found, BaseException):
                    raise found
                self._results = found
            finally:
                self._tmp.cleanup()
        return self._results

    def close(self) -> None:
        """Stop a child still running (the caller failed before it asked for the results)."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
            self._tmp.cleanup()


def in_background(calls: Sequence[Call]) -> Background:
    """Start `calls` (in a child process where a second core is usable)."""
    return Background(calls)


def _in_child() -> bool:
    workers = os.environ.get("CAPTRACK_WORKERS", "").strip()
    if workers.isdigit() and int(workers) == 1:
        return False
    return usable_cores() > 1


def _run(calls: Sequence[Call]) -> list[Any]:
    return [function(*args, **kwargs) for function, args, kwargs in calls]


def _work(job: Path, out: Path) -> None:
    calls = pickle.loads(job.read_bytes())
    try:
        found: object = _run(calls)
    except Exception as exc:  # raised again in the caller, as running it there would have raised it
        found = exc
    out.write_bytes(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    die_with_parent()
    _work(Path(sys.argv[1]), Path(sys.argv[2]))
