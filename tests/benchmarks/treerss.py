"""Peak resident memory of this process and its descendants together (worker processes included).

``ru_maxrss`` gives one process's peak (and, for children, the largest single child's), not what a machine
must hold while a parent and its workers run at once; this samples the sum over the process tree.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

PAGE = os.sysconf("SC_PAGE_SIZE")


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += children
            todo += children
    return out


def tree_rss_bytes(pid: int | None = None) -> int:
    """Resident bytes of `pid` (default: this process) and every descendant, now."""
    total = 0
    for member in [pid or os.getpid(), *_descendants(pid or os.getpid())]:
        try:
            total += int(Path(f"/proc/{member}/statm").read_text().split()[1]) * PAGE
        except (OSError, IndexError, ValueError):
            continue  # exited meanwhile
    return total


class TreePeak:
    """Samples tree_rss_bytes every `every_s` seconds in a thread while in the block; ``peak_mb`` after."""

    def __init__(self, every_s: float = 0.05) -> None:
        self.every_s, self.peak_mb = every_s, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, tree_rss_bytes() / 2**20)
            self._stop.wait(self.every_s)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
