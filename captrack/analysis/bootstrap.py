"""Paired bootstrap of relative drift: items resampled jointly for base and variant, per task."""

from __future__ import annotations

import zlib
from collections import defaultdict

import numpy as np
from numpy.typing import NDArray

from captrack.analysis.drift import relative_drift_array
from captrack.analysis.stats import bootstrap_indices

__all__ = ["Items", "bootstrap_drift", "resample_counts"]

# (variant, task, metric) -> (base values, variant values) per paired item, in item order.
Items = dict[tuple[str, str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]


def resample_counts(task: str, n_items: int, n_resamples: int, seed: int) -> NDArray[np.float32]:
    """How often each item is drawn in each resample (rows: resamples).

    Depends only on (seed, task, n_items), so every metric and variant of a task with the same
    items shares the resamples and capability CIs stay paired across members.
    """
    rng = np.random.default_rng([seed, zlib.crc32(task.encode()), n_items])
    idx = bootstrap_indices(n_items, n_resamples, rng)
    offsets = (np.arange(n_resamples, dtype=np.int64) * n_items)[:, None]
    flat = np.bincount((idx + offsets).ravel(), minlength=n_resamples * n_items)
    return flat.reshape(n_resamples, n_items).astype(np.float32)


def bootstrap_drift(items: Items, n_resamples: int, seed: int) -> dict[tuple[str, str, str], NDArray[np.float64]]:
    """Bootstrap samples of the relative drift (percent) for every (variant, task, metric).

    Works task by task, so memory holds one task's resample counts at a time.
    """
    if n_resamples <= 0:
        return {}
    by_task: dict[tuple[str, int], list[tuple[str, str, str]]] = defaultdict(list)
    for key, (base, _) in items.items():
        if base.size:
            by_task[(key[1], base.size)].append(key)
    out: dict[tuple[str, str, str], NDArray[np.float64]] = {}
    for (task, n_items), keys in sorted(by_task.items()):
        counts = resample_counts(task, n_items, n_resamples, seed)
        columns = np.empty((n_items, 2 * len(keys)), dtype=np.float64)
        for i, key in enumerate(keys):
            columns[:, 2 * i], columns[:, 2 * i + 1] = items[key]
        means = (counts.astype(np.float64) @ columns) / n_items
        for i, key in enumerate(keys):
            out[key] = relative_drift_array(means[:, 2 * i], means[:, 2 * i + 1])
    return out
