"""Paired bootstrap of relative drift: items resampled jointly for base and variant, per task."""

from __future__ import annotations

import math
import zlib
from collections import OrderedDict, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np
from numpy.typing import NDArray

from captrack.analysis.drift import relative_drift_array
from captrack.analysis.intervals import ratio_interval
from captrack.analysis.stats import bootstrap_indices, percentile_ci

__all__ = ["Items", "bootstrap_drift", "cluster_resample_counts", "drift_ci", "resample_counts", "shared_resamples"]

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
        if counts.nbytes > self.max_bytes:
            return
        while self.entries and self.used + counts.nbytes > self.max_bytes:
            self.used -= self.entries.popitem(last=False)[1].nbytes
        self.entries[key] = counts
        self.used += counts.nbytes


_CACHE: list[_Cache] = []


@contextmanager
def shared_resamples(max_bytes: int = 256 << 20) -> Iterator[None]:
    """Within the block, the resample counts of a (task, n_items) are drawn once and shared by every statistic
    that resamples that task (drift CIs, calibration, contrasts), up to `max_bytes` of counts held: every task of a
    million records (50 tasks of 5,000 items, 1,000 resamples: 250 MB); at ten million (50 MB a task) each
    statistic's pass over the tasks would push the first out before the next pass came back to it, so no more is
    held for them (it was 768 MB, never read again there)."""
    _CACHE.append(_Cache(max_bytes))
    try:
        yield
    finally:
        _CACHE.pop()


_DRAW_CHUNK = 1 << 22
"""Indices drawn per step (~16 MB of int32): the draw of a large task is made in row blocks, never all at once."""


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
        idx = bootstrap_indices(n_items, block, rng).astype(np.int64)
        idx += (np.arange(block, dtype=np.int64) * n_items)[:, None]
        counts = np.bincount(idx.ravel(), minlength=block * n_items).reshape(block, n_items)
        if wide is None and counts.size and int(counts.max()) > np.iinfo(np.uint8).max:
            wide = small.astype(np.float32)
        (small if wide is None else wide)[start:start + block] = counts
    return small if wide is None else wide


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
            wide = counts.astype(np.float64)
            drawn = wide.sum(axis=1, keepdims=True) if labels else n_items  # clusters vary in size
            means = (wide @ columns) / drawn
            del wide
            for i, key in enumerate(keys):
                out[key] = relative_drift_array(means[:, 2 * i], means[:, 2 * i + 1])
    return out


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
