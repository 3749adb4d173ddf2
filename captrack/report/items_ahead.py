"""distribution_items.csv's text written by a second core while the analysis still runs.

A million-record comparison spends about 10 s of one core on the text of distribution_items.csv (388 MB, most of
it Python's float formatting), and the analysis before it keeps a second core mostly idle. `ItemsAhead` follows a
DistributionItems (captrack.analysis.item_spool.PartFollower): from `SHARED_ROWS` rows on, where a second core is
free, each part is handed, as it is added, to a child process (captrack.report.background) that writes its CSV
text to a file; the writer then copies those files (`ItemsAhead.text`), after writing itself, from the last one
back, the parts the child has not reached. Both run the same function on the same rows as the writer alone would
(captrack.report.fast_csv.write_csv_rows), so the bytes are the same. Below `SHARED_ROWS`, on one core, or on a
machine others keep busy, it does nothing and the writer writes the text itself.

Only a caller that will write the comparison asks for it (captrack.compare.use_case.compare's ``items_ahead``): a
comparison dropped unwritten stops the child when it is let go.
"""

from __future__ import annotations

import os
import tempfile
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

from captrack.analysis.item_spool import SpooledParts
from captrack.errors import CaptrackError
from captrack.files import scratch_folder
from captrack.processes import CpuMark, busy_cores_since, plan_threads, usable_cores, worker_count
from captrack.report.background import Background
from captrack.report.fast_csv import write_csv_rows

__all__ = ["SHARED_ROWS", "ItemsAhead", "second_core_free", "write_part"]

SHARED_ROWS = 200_000
"""Rows from which a second core is worth its start (about a second: Python, pandas and pyarrow imported) and the
text read back."""


def second_core_free(since: CpuMark | None = None) -> bool:
    """A second core is usable (captrack.processes.worker_count: a whole number in CAPTRACK_WORKERS wins) and not
    kept busy by other work: since `since` (captrack.processes.busy_cores_since), else now (plan_threads samples the
    machine for half a second). On a machine that others keep busy the two processes got no more of it than one (the
    child's start and its text read back cost more)."""
    if worker_count(2, usable_cores()) < 2:
        return False
    busy = busy_cores_since(since) if since is not None else None
    return plan_threads(load=busy).threads >= 2


class ItemsAhead:
    """Follows a DistributionItems: each part's CSV text (the header with the first) written to a file of its own by
    a child process as the parts are added, once `min_rows` rows (default SHARED_ROWS) are there and a second core
    was free since it was made (asked once). The child runs at a lower priority (nice 10): the analysis keeps the
    cores it uses, the child takes what it leaves. When the writer asks for the text, the parts the child has not
    reached are written by the caller, from the last one back, as the child goes on from the first (`write_part`)."""

    def __init__(self, min_rows: int | None = None) -> None:
        self._min_rows = SHARED_ROWS if min_rows is None else min_rows
        self._waiting: list[SpooledParts] = []
        self._sent: list[SpooledParts] = []
        self._rows = self._parts = 0
        self._declined = False
        self._job: Background | None = None
        self._folder: Path | None = None
        self._since = CpuMark.mark()  # what other work keeps the machine busy with is measured from here
        self._stop: Callable[[], object] = lambda: None  # once started: stops the child, removes its files

    def follow(self, part: SpooledParts, rows: int) -> None:
        """Take the part just added (captrack.analysis.item_spool.PartFollower)."""
        self._parts += 1
        if self._declined:
            return
        self._waiting.append(part)
        self._rows += rows
        if self._job is None:
            if self._rows < self._min_rows:
                return
            if not second_core_free(self._since):
                self._declined, self._waiting = True, []
                return
            folder = tempfile.TemporaryDirectory(prefix="items-csv-", dir=scratch_folder())
            self._folder, self._job = Path(folder.name), Background(warm_up=[(os.nice, (10,), {})] if hasattr(os, "nice") else [])
            self._stop = weakref.finalize(self, _stop, self._job, folder)
        at = len(self._sent)
        self._job.run([(write_part, (waiting, self._part_file(at + i), at + i == 0), {})
                       for i, waiting in enumerate(self._waiting)])
        self._sent += self._waiting
        self._waiting = []

    def text(self, parts: int) -> Iterator[bytes] | None:
        """The CSV text of all `parts` parts (header first, UTF-8), once written; None where the child was not asked to
        write them all (the writer writes the text itself)."""
        if self._job is None or len(self._sent) != parts or self._parts != parts:
            return None
        return self._read(self._job)

    def _part_file(self, index: int) -> Path:
        assert self._folder is not None
        return self._folder / f"{index:06d}.csv"

    def _read(self, job: Background) -> Iterator[bytes]:
        try:
            for index in reversed(range(len(self._sent))):  # the parts the child has not reached, written here
                if not write_part(self._sent[index], self._part_file(index), index == 0):
                    break  # the child took this one, so all before it (it goes in order)
            try:
                job.results()
            except CaptrackError as exc:
                raise CaptrackError(f"distribution_items.csv: the process writing its rows failed: {exc}") from exc
            for index in range(len(self._sent)):
                with self._part_file(index).open("rb") as handle:
                    yield from iter(lambda: handle.read(1 << 24), b"")
        finally:
            self._stop()


def write_part(part: SpooledParts, out: Path, header: bool) -> bool:
    """Write the CSV rows of `part` (the header first with `header`) to `out`, unless the other process has claimed
    it: whether it was written here. A part is claimed by making ``out.claim``, which only one process can."""
    try:
        os.close(os.open(out.with_suffix(".claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    write_csv_rows(part, out, header=header)
    return True


def _stop(job: Background, folder: tempfile.TemporaryDirectory[str]) -> None:
    """Stop the child if it still runs and remove its files."""
    job.close()
    folder.cleanup()
