"""Paired bootstrap of relative drift: items resampled jointly for base and variant, per task."""

from __future__ import annotations

import math
import weakref
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from numpy.typing import NDArray

from captrack.analysis.drift import relative_drift_array
from captrack.analysis.intervals import ratio_interval
from captrack.analysis.stats import bootstrap_indices, percentile_ci

__all__ = ["LARGE_COUNTS", "Items", "ResampleMatrix", "RowBlocks", "bootstrap_drift", "cluster_resample_counts", "drift_ci",
           "products", "resample_counts", "resample_matrix", "row_blocks", "shared_resamples"]

# (variant, task, metric) -> (base values, variant values) per paired item, in item order.
Items = dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]


class _Cache:
    """Resample counts already drawn (as uint8 where every count fits), least recently used first out."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.used = max_bytes, 0
        self.entries: OrderedDict[tuple[str, int, int, int], NDArray[np.generic]] = OrderedDict()

    def get(self, key: tuple[str, int, int, int]) -> NDArray[np.generic] | None:
        found = self.entries.get(key)
        if found is not None:
            self.entries.move_to_end(key)
        return found

    def put(self, key: tuple[str, int, int, int], counts: NDArray[np.generic]) -> None:
        if counts.nbytes > self.max_bytes or counts.size > LARGE_COUNTS:  # a large task's: see shared_resamples
            return
        while self.entries and self.used + counts.nbytes > self.max_bytes:
            self.used -= self.entries.popitem(last=False)[1].nbytes
        self.entries[key] = counts
        self.used += counts.nbytes


class _Products:
    """The products of the matrix multiplied last (`products`) with the operands it was last asked for, so that the
    same question is answered once: a task's base side is the same for each of its variants (calibration: ~40% of its
    products at a million records). Operands are told apart by shape, type and bytes, the matrix by identity (held
    weakly: resample matrices are never written once made); what is kept and handed out are copies."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self.matrix: weakref.ref[ResampleMatrix] | None = None
        self.entries: list[tuple[list[tuple[tuple[int, ...], str, bytes]], list[NDArray[Any]]]] = []

    @staticmethod
    def _key(others: Sequence[NDArray[Any]]) -> list[tuple[tuple[int, ...], str, bytes]]:
        return [(other.shape, other.dtype.str, other.tobytes()) for other in others]

    def get(self, matrix: ResampleMatrix, others: Sequence[NDArray[Any]]) -> list[NDArray[Any]] | None:
        if self.matrix is None or self.matrix() is not matrix:
            return None
        key = self._key(others)
        for at, (asked, made) in enumerate(self.entries):
            if asked == key:
                self.entries.append(self.entries.pop(at))  # the least recently asked go first
                return [p.copy() for p in made]
        return None

    def put(self, matrix: ResampleMatrix, others: Sequence[NDArray[Any]], made: list[NDArray[Any]]) -> None:
        if self.matrix is None or self.matrix() is not matrix:
            self.matrix, self.entries = weakref.ref(matrix), []
        self.entries = [*self.entries[-(self.keep - 1):], (self._key(others), [p.copy() for p in made])]


_CACHE: list[_Cache] = []
_PRODUCTS: list[_Products] = []


@contextmanager
def shared_resamples(max_bytes: int = 256 << 20) -> Iterator[None]:
    """Within the block, the resample counts of a (task, n_items) are drawn once and shared by every statistic
    that resamples that task (drift CIs, calibration, contrasts), up to `max_bytes` of counts held: every task of a
    million records (50 tasks of 5,000 items, 1,000 resamples: 250 MB); at ten million (50 MB a task) each
    statistic's pass over the tasks would push the first out before the next pass came back to it, so no more is
    held for them (it was 768 MB, never read again there). The counts of a task above LARGE_COUNTS are not kept at
    all: at ten million records the passes found none of them again, and the 256 MB they filled was held through
    the statistics' own peaks (issue 44); redrawing one costs about a second."""
    _CACHE.append(_Cache(max_bytes))
    _PRODUCTS.append(_Products())
    try:
        yield
    finally:
        _CACHE.pop()
        _PRODUCTS.pop()


LARGE_COUNTS = 1 << 25
"""Resample counts (resamples x items) above which a task's statistics multiply them a block of resample rows at a
time (`row_blocks`) and its counts are not cached: 1,000 resamples of 33,554 items. A task of 50,000 items made
400 MB of float64 counts at once (issue 44); the tasks of the goldens and committed boards are far below it, so
they take the whole-matrix path, and its bytes, unchanged."""

_BLOCK_ELEMENTS = 1 << 22
"""Counts per row block of a large task (~32 MB as float64)."""

_ROW_MULTIPLE = 64
"""Row blocks are a multiple of this many rows: BLAS kernels handle rows in groups of up to 16 (and a thread's share
of them in such groups), so blocks that keep each row's place in its group mostly sum each row as the whole product
did; blocks of other sizes differed in the last bits more often. Where the values are whole numbers (0/1 metrics)
every order gives the same sums."""

_DRAW_CHUNK = 1 << 22
"""Indices drawn per step (~16 MB of int32): the draw of a large task is made in row blocks, never all at once."""


_ROW_BY_ROW = 512
"""Items from which a resample's counts are made row by row (one bincount of its draws, counts of one row fitting
in cache) rather than for a block of rows at once (one bincount of the block's indices offset per row, through
int64 copies of the block): 2x faster at 5,000 items; below a few hundred items the block is faster."""


def _draw_counts(task: str, n_items: int, n_resamples: int, seed: int) -> NDArray[np.generic]:
    """Counts of each item in each resample (uint8 where every count fits, else float32), drawn in blocks of
    resamples: the same random stream as one draw (the generator hands out its 32-bit draws in order whatever
    the block sizes), without the whole index matrix in memory."""
    rng = np.random.default_rng([seed, zlib.crc32(task.encode()), n_items])
    small = np.zeros((n_resamples, n_items), dtype=np.uint8)
    wide: NDArray[np.float32] | None = None
    rows = max(1, _DRAW_CHUNK // max(n_items, 1))
    for start in range(0, n_resamples, rows):
        block = min(rows, n_resamples - start)
        idx = bootstrap_indices(n_items, block, rng)
        for at, counts in _block_counts(idx, n_items, start):
            if wide is None and counts.size and int(counts.max()) > np.iinfo(np.uint8).max:
                wide = small.astype(np.float32)
            (small if wide is None else wide)[at] = counts
    return small if wide is None else wide


def _block_counts(idx: NDArray[np.int32], n_items: int, start: int) -> Iterator[tuple[Any, NDArray[np.int64]]]:
    """Where in the counts (rows from `start`) and how often each item is drawn in the resamples `idx` (rows): row
    by row from _ROW_BY_ROW items, else the whole block at once."""
    if n_items >= _ROW_BY_ROW:
        for row, drawn in enumerate(idx, start):
            yield row, np.bincount(drawn, minlength=n_items)
        return
    block = idx.shape[0]
    flat = idx.astype(np.int64)
    flat += (np.arange(block, dtype=np.int64) * n_items)[:, None]
    yield slice(start, start + block), np.bincount(flat.ravel(), minlength=block * n_items).reshape(block, n_items)


def resample_counts(task: str, n_items: int, n_resamples: int, seed: int) -> NDArray[np.float32]:
    """How often each item is drawn in each resample (rows: resamples).

    Depends only on (seed, task, n_items), so every metric and variant of a task with the same
    items shares the resamples and capability CIs stay paired across members (inside
    `shared_resamples`, they are drawn once).
    """
    return _shared_counts(task, n_items, n_resamples, seed).astype(np.float32)


def _shared_counts(task: str, n_items: int, n_resamples: int, seed: int) -> NDArray[np.generic]:
    """`resample_counts` as drawn and kept (uint8 where every count fits): a caller wanting another type casts it
    once (the same whole numbers), not through a float32 copy."""
    key = (task, n_items, n_resamples, seed)
    cache = _CACHE[-1] if _CACHE else None
    counts = cache.get(key) if cache is not None else None
    if counts is None:
        counts = _draw_counts(task, n_items, n_resamples, seed)
        if cache is not None:
            cache.put(key, counts)
    return counts


def row_blocks(n_rows: int, n_cols: int) -> list[slice]:
    """Slices of the rows of an n_rows x n_cols resample matrix to build and multiply one at a time: one slice of
    every row while it has at most LARGE_COUNTS elements (the whole-matrix product, as before issue 44), else
    blocks of a multiple of _ROW_MULTIPLE rows of about _BLOCK_ELEMENTS elements.

    Outside whole numbers a block's product may differ from the whole matrix's in the last bits, as the whole
    product's own does between machines whose BLAS splits it among another number of threads."""
    if n_rows * n_cols <= LARGE_COUNTS:
        return [slice(0, n_rows)]
    rows = max(_ROW_MULTIPLE, _BLOCK_ELEMENTS // max(n_cols, 1) // _ROW_MULTIPLE * _ROW_MULTIPLE)
    return [slice(start, min(start + rows, n_rows)) for start in range(0, n_rows, rows)]


class RowBlocks:
    """A tall matrix that is never held whole: `build(rows)` makes the rows `rows` (a slice), and `matrix @ other`
    multiplies it a block of rows at a time (`row_blocks`), so only one block is held besides the product."""

    def __init__(self, shape: tuple[int, int], dtype: type[np.generic], build: Callable[[slice], NDArray[np.generic]]) -> None:
        self.shape, self.dtype, self.build = shape, np.dtype(dtype), build

    def __matmul__(self, other: NDArray[Any]) -> NDArray[Any]:
        return self.products(other)[0]

    def products(self, *others: NDArray[Any]) -> list[NDArray[Any]]:
        """`[matrix @ other for other in others]`, each block built once for all of them."""
        outs: list[NDArray[Any]] = []
        for rows in row_blocks(*self.shape):
            block = self.build(rows)
            for i, other in enumerate(others):
                product = block @ other
                if i == len(outs):
                    outs.append(np.empty((self.shape[0], *product.shape[1:]), dtype=product.dtype))
                outs[i][rows] = product
        return outs

    def row_sums(self) -> NDArray[Any]:
        """Each row's sum, as `matrix.sum(axis=1)` gives it (summed within the row, so blocks do not change it)."""
        return np.concatenate([self.build(rows).sum(axis=1) for rows in row_blocks(*self.shape)])


ResampleMatrix = NDArray[Any] | RowBlocks
"""Resample weights of a task: the whole matrix, or (a large task) a RowBlocks made a block of rows at a time."""


def products(matrix: ResampleMatrix, *others: NDArray[Any]) -> list[NDArray[Any]]:
    """`[matrix @ other for other in others]`; a RowBlocks builds each of its blocks once for all of them. Inside
    `shared_resamples`, the products last made of the same matrix and operands are handed out again (copies)."""
    remembered = _PRODUCTS[-1] if _PRODUCTS else None
    found = remembered.get(matrix, others) if remembered is not None else None
    if found is None:
        found = matrix.products(*others) if isinstance(matrix, RowBlocks) else [matrix @ other for other in others]
        if remembered is not None:
            remembered.put(matrix, others, found)
    return found


def resample_matrix(task: str, n_items: int, n_resamples: int, seed: int, n_rows: int, dtype: type[np.generic],
                    make: Callable[[NDArray[np.generic], slice], NDArray[np.generic]]) -> ResampleMatrix:
    """A matrix of n_rows x n_items made from a task's resample counts as drawn (uint8 where every count fits) by
    `make(counts, rows)` (its rows `rows`): whole where it has at most LARGE_COUNTS elements, else a RowBlocks made a
    block at a time. `make` casts the counts to the type it makes (the same whole numbers from uint8 as from the
    float32 copy it was once handed, one cast fewer) and must not write into them (they are shared)."""
    counts = _shared_counts(task, n_items, n_resamples, seed)
    if n_rows * n_items <= LARGE_COUNTS:
        return make(counts, slice(0, n_rows))
    return RowBlocks((n_rows, n_items), dtype, lambda rows: make(counts, rows))


def cluster_resample_counts(task: str, labels: Sequence[object], n_resamples: int, seed: int) -> NDArray[np.float32]:
    """Like resample_counts, but whole clusters are drawn: each item counts as often as its cluster was drawn."""
    _, inverse = np.unique(np.asarray([str(x) for x in labels]), return_inverse=True)
    per_cluster = resample_counts(task + "\x1fclusters", int(inverse.max()) + 1, n_resamples, seed)
    return per_cluster[:, inverse]


def bootstrap_drift(items: Items, n_resamples: int, seed: int,
                    clusters: Mapping[tuple[str, str, str], Sequence[object]] | None = None,
                    ) -> dict[tuple[str, str, str], NDArray[np.float64]]:
    """Bootstrap samples of the relative drift (percent) for every (variant, task, metric).

    Works task by task, so memory holds one task's resample counts at a time. With `clusters` (per key,
    each item's cluster label), clusters are resampled instead of items (`compare --cluster FIELD`).
    """
    if n_resamples <= 0:
        return {}
    by_task: dict[tuple[str, int], list[tuple[str, str, str]]] = defaultdict(list)
    for key, (base, _) in items.items():
        if base.size:
            by_task[(key[1], base.size)].append(key)
    out: dict[tuple[str, str, str], NDArray[np.float64]] = {}
    for (task, n_items), all_keys in sorted(by_task.items()):
        by_labels: dict[tuple[str, ...], list[tuple[str, str, str]]] = defaultdict(list)
        for key in all_keys:
            by_labels[tuple(map(str, clusters[key])) if clusters and key in clusters else ()].append(key)
        for labels, keys in by_labels.items():
            # (whole numbers: the same float64 matrix whether cast from uint8 or float32; one copy, not two)
            counts = cluster_resample_counts(task, labels, n_resamples, seed) if labels else _shared_counts(
                task, n_items, n_resamples, seed)
            columns = np.empty((n_items, 2 * len(keys)), dtype=np.float64)
            for i, key in enumerate(keys):
                columns[:, 2 * i], columns[:, 2 * i + 1] = items[key]
            means = _resample_means(counts, columns, clustered=bool(labels))
            for i, key in enumerate(keys):
                out[key] = relative_drift_array(means[:, 2 * i], means[:, 2 * i + 1])
    return out


def _resample_means(counts: NDArray[np.generic], columns: NDArray[np.float64], clustered: bool) -> NDArray[np.float64]:
    """Each resample's (row of `counts`) weighted mean of each column, the counts cast to float64 one block of rows
    at a time (`row_blocks`: the whole matrix for all but large tasks; one task of 50,000 items cast whole took
    400 MB, issue 44)."""
    means = np.empty((counts.shape[0], columns.shape[1]), dtype=np.float64)
    for rows in row_blocks(*counts.shape):
        wide = counts[rows].astype(np.float64)
        drawn = wide.sum(axis=1, keepdims=True) if clustered else counts.shape[1]  # clusters vary in size
        means[rows] = (wide @ columns) / drawn
    return means


def drift_ci(base: NDArray[np.float64], variant: NDArray[np.float64], samples: NDArray[np.float64] | None, level: float,
             clustered: bool = False) -> tuple[float, float, float]:
    """The CI of one (task, metric)'s relative drift and the share of bootstrap resamples that had none.

    Paired 0/1 outcomes get the adjusted log-ratio interval (captrack.analysis.intervals.ratio_interval), which
    keeps its coverage where the base got few items right (a percentile bootstrap there is often missing, or of
    width zero); clustered, the hull of it and the percentile bootstrap of whole clusters (`samples`), so clusters
    never narrow it. Other metrics get the percentile bootstrap of `samples`; where some resamples had a base mean
    of 0 (no relative drift) the CI is withheld (NaN) rather than taken from the others, and their share is
    returned for a warning.
    """
    binary = bool(base.size) and bool(np.isin(base, (0.0, 1.0)).all()) and bool(np.isin(variant, (0.0, 1.0)).all())
    ratio = ratio_interval(base, variant, level) if binary else None
    if ratio is not None and not clustered:
        return ratio[0], ratio[1], 0.0
    if samples is None or not len(samples):
        return (ratio[0], ratio[1], 0.0) if ratio is not None else (math.nan, math.nan, 0.0)
    dropped = float(np.mean(~np.isfinite(samples)))
    if dropped > 0:
        return math.nan, math.nan, dropped
    low, high = percentile_ci(samples, level)
    if ratio is not None:
        low, high = min(low, ratio[0]), max(high, ratio[1])
    return low, high, 0.0
