"""Parts of a leaderboard made by a child process while the caller writes the rest: its figures.

Drawing a large board's figures is most of a core for several seconds (a 200-variant heatmap: matplotlib lays
out every tick label in each of its five draws), and starting Python with matplotlib and seaborn is seconds
more; the index, README and tables need nothing of them but their names. With a second usable core they go to
``python -m captrack.report.background OUT`` (started by captrack.processes.spawn, so it dies with its caller),
started before the caller has computed what it will send: it runs its warm-up calls (imports) while the caller
computes, then each batch of calls the caller sends (one pickle file per batch, named on its stdin), in order,
and sends back what each returned; on one core, or with CAPTRACK_WORKERS=1, the calls run here (the warm-up
skipped). Either way the same functions run on the same inputs, so the outputs are the same bytes.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any

from captrack.errors import CaptrackError
from captrack.files import scratch_folder
from captrack.processes import captrack_child_env, die_with_parent, spawn, usable_cores

__all__ = ["Background", "Call", "in_background"]

Call = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]
"""One call: a module-level function (sent to the child by its name, as pickle does), its arguments and keyword
arguments."""


class Background:
    """Calls being run in order (in a child process, or already run here); :meth:`results` waits for them.

    Args:
        warm_up: calls the child runs first, whose results nobody wants (imports it will need, made while the
            caller computes what it sends); not run here.
    """

    def __init__(self, warm_up: Sequence[Call] = ()) -> None:
        self._results: list[Any] = []
        self._process: subprocess.Popen[bytes] | None = None
        self._sent = 0
        if _in_child():
            self._tmp = tempfile.TemporaryDirectory(prefix="background-", dir=scratch_folder())
            self._out, self._log = (Path(self._tmp.name) / name for name in ("out", "log"))
            with self._log.open("wb") as log:
                self._process = spawn([sys.executable, "-m", __name__, str(self._out)], stdin=subprocess.PIPE,
                                      stdout=log, stderr=log, env=captrack_child_env())
            self._send(warm_up, _WARM_UP)

    def run(self, calls: Sequence[Call]) -> None:
        """Run `calls` after those sent before (here, at once: an exception one raises is raised now)."""
        if self._process is None:
            self._results += _run(calls)
        else:
            self._send(calls, _RUN)

    def results(self) -> list[Any]:
        """What each call returned, the warm-up's left out, in the calls' order (an exception one raised in the
        child is raised again here)."""
        process = self._process
        if process is None:
            return self._results
        self._process = None
        try:
            _stdin(process).close()  # no more calls: the child sends back what they returned
            code = process.wait()
            if code != 0 or not self._out.is_file() or not self._out.stat().st_size:  # it died, or never ran our jobs
                tail = self._log.read_text(errors="replace")[-2000:]
                raise CaptrackError(f"the child process running the calls (captrack.report.background) failed (exit {code}); "
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
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.kill()
            process.wait()
            _stdin(process).close()
            self._tmp.cleanup()

    def _send(self, calls: Sequence[Call], kind: str) -> None:
        """Write `calls` to a file of their own and name it, with their kind, to the child (which reads it once it
        is free)."""
        if not calls:
            return
        job = Path(self._tmp.name) / f"job-{self._sent}"
        self._sent += 1
        job.write_bytes(pickle.dumps(list(calls), protocol=pickle.HIGHEST_PROTOCOL))
        try:
            stdin = _stdin(self._process)
            stdin.write(f"{kind} {job}\n".encode())
            stdin.flush()
        except BrokenPipeError:  # the child died: results() says how
            pass


def in_background(calls: Sequence[Call]) -> Background:
    """Start `calls` (in a child process where a second core is usable)."""
    made = Background()
    made.run(calls)
    return made


_WARM_UP, _RUN = "warm-up", "run"  # a job's kind, as the child reads it: what its calls return is dropped / kept


def _stdin(process: subprocess.Popen[bytes] | None) -> IO[bytes]:
    assert process is not None and process.stdin is not None
    return process.stdin


def _in_child() -> bool:
    workers = os.environ.get("CAPTRACK_WORKERS", "").strip()
    if workers.isdigit() and int(workers) == 1:
        return False
    return usable_cores() > 1


def _run(calls: Sequence[Call]) -> list[Any]:
    return [function(*args, **kwargs) for function, args, kwargs in calls]


def _work(jobs: IO[bytes], out: Path) -> None:
    """Run the calls of each job file named on `jobs` (a line each: its kind, its path), in order, until it ends;
    write what the run jobs' calls returned (or the first exception one raised: the jobs after it are read, not
    run) to `out`."""
    found: list[Any] | BaseException = []
    for line in jobs:
        if isinstance(found, BaseException):
            continue
        kind, _, job = line.decode().rstrip("\n").partition(" ")
        try:
            returned = _run(pickle.loads(Path(job).read_bytes()))
            found += returned if kind == _RUN else []
        except Exception as exc:  # raised again in the caller, as running it there would have raised it
            found = exc
    out.write_bytes(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))


if __name__ == "__main__":
    die_with_parent()
    _work(sys.stdin.buffer, Path(sys.argv[1]))
