"""The per-item table of the distribution diagnostics, kept on disk one variant at a time.

A comparison of many variants or of large tasks has one distribution_items row per multiple-choice
item and variant (a million rows at a million records): held in memory it grew with every variant
analysed. `DistributionItems` appends each variant's rows to a temporary file as they are diagnosed
and keeps in memory only what other tables read from them: the answer churn counts, each
(variant, task)'s 1 − BC values (rankings.csv) and the forgotten items' kinds (drill-down pages).
The writer streams the rows back, one variant at a time, into distribution_items.csv.

The file is made in the system's temporary folder (TMPDIR) and needs about as much free space there as
the rows take pickled (about 290 bytes per item: 2.9 GB at ten million items); where /tmp is a tmpfs,
point TMPDIR at a disk to keep the rows out of memory. It has a name, so that another process can read some of
the parts back (`SpooledParts`): a `PartFollower` handed each part as it is added (captrack.report.items_ahead: a
second core writes their CSV text while the analysis goes on), or the writer (a second core writes the text of the
later parts while it writes the first ones).
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Protocol

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from captrack.analysis.churn import choice_churn
from captrack.files import scratch_folder

__all__ = ["DistributionItems", "PartFollower", "SpooledParts"]

_FORGOTTEN_COLUMNS = ["variant", "task", "doc_hash", "forgetting_kind"]


def _doc_hash_order(doc_hash: pd.Series) -> NDArray[np.int64]:
    """Each row's doc_hash as its place among the distinct doc_hashes in sorted order (missing ones first): the
    codes of ``pd.factorize(doc_hash, sort=True)`` up to a shift, which an argsort orders alike. Ranked by Arrow
    (UTF-8 bytes sort as Python sorts text): sorting a million hashes as Python strings took 2 s of a comparison."""
    array = pa.array(doc_hash, type=pa.string(), from_pandas=True)
    ranks = pc.rank(array, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64)
    if array.null_count:
        ranks[array.is_null().to_numpy(zero_copy_only=False)] = 0  # first, as factorize's -1
    return ranks


@dataclass(frozen=True)
class SpooledParts:
    """Some parts of a DistributionItems' file, for another process to read back (picklable: a path and offsets).
    Valid while the DistributionItems they came from is alive (its file is removed when it is let go)."""

    path: str
    offsets: tuple[int, ...]

    def frames(self) -> Iterator[pd.DataFrame]:
        """Each part's rows, in order (one part in memory at a time)."""
        with open(self.path, "rb") as handle:
            for offset in self.offsets:
                handle.seek(offset)
                yield pickle.load(handle)


class PartFollower(Protocol):
    """Handed each part of a DistributionItems as it is added (in order, after it is readable from the file)."""

    def follow(self, part: SpooledParts, rows: int) -> None:
        """Take the part just added (`rows` rows)."""


@dataclass
class DistributionItems:
    """distribution_items rows, written to a temporary file as each variant's are added (`add`), read back with
    `frames` (one per `add`, in order) or `to_frame` (all at once: small comparisons and tests).

    ``churn``: (variant, task) -> items whose top option changed while both sides stayed right (or wrong).
    ``one_minus_bc``: (variant, task) -> 1 − BC per item, in doc_hash order.
    ``follower``: handed each part as it is added (None: nobody).
    """

    rows: int = 0
    churn: dict[tuple[str, str], float] = field(default_factory=dict)
    one_minus_bc: dict[tuple[str, str], NDArray[np.float64]] = field(default_factory=dict)
    _forgotten: list[pd.DataFrame] = field(default_factory=list)
    follower: PartFollower | None = None
    _file: IO[bytes] | None = None
    _offsets: list[int] = field(default_factory=list)  # where each part's pickle starts in the file
    _sizes: list[int] = field(default_factory=list)  # each part's rows

    def __len__(self) -> int:
        return self.rows

    @property
    def empty(self) -> bool:
        """True without rows."""
        return self.rows == 0

    def add(self, items: pd.DataFrame) -> None:
        """Append one variant's rows (captrack.analysis.distribution.diagnose's item table) and keep what other
        tables read from them."""
        if items.empty:
            return
        self.churn |= choice_churn(items)
        rank = _doc_hash_order(items["doc_hash"])
        overlap = items["bhattacharyya"].to_numpy(dtype=float)
        for (variant, task), rows in items.groupby(["variant", "task"], sort=True).indices.items():
            self.one_minus_bc[(str(variant), str(task))] = 1.0 - overlap[rows[np.argsort(rank[rows], kind="stable")]]
        self._forgotten.append(items.loc[items["transition"] == "10", _FORGOTTEN_COLUMNS].reset_index(drop=True))
        if self._file is None:
            self._file = tempfile.NamedTemporaryFile(prefix="items-", dir=scratch_folder())
        self._offsets.append(self._file.seek(0, 2))
        pickle.dump(items, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        self._file.flush()  # readable by another process (`spooled`)
        self.rows += len(items)
        self._sizes.append(len(items))
        if self.follower is not None:
            self.follower.follow(self.spooled(len(self._offsets) - 1), len(items))

    @property
    def part_rows(self) -> list[int]:
        """The rows of each part, in the order they were added."""
        return list(self._sizes)

    def frames(self, stop: int | None = None) -> Iterator[pd.DataFrame]:
        """Each added part's rows (the first `stop` parts: all by default), in the order they were added (one part
        in memory at a time)."""
        if self._file is None:
            return
        self._file.seek(0)
        for _ in self._offsets[:stop]:
            yield pickle.load(self._file)

    def spooled(self, start: int) -> SpooledParts:
        """The parts from the `start`-th on, for another process to read (`SpooledParts.frames`)."""
        return SpooledParts(self._file.name if self._file is not None else "", tuple(self._offsets[start:]))

    def to_frame(self) -> pd.DataFrame:
        """Every row in one frame, index 0..n-1 (an empty frame without rows)."""
        parts = list(self.frames())
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

    def forgotten_kinds(self) -> dict[tuple[str, str, str], str]:
        """(variant, task, doc_hash) -> collapse / drift / shift, for the forgotten (1→0) items."""
        out: dict[tuple[str, str, str], str] = {}
        for frame in self._forgotten:
            for variant, task, doc_hash, kind in frame.itertuples(index=False):
                out[(str(variant), str(task), str(doc_hash))] = str(kind)
        return out
