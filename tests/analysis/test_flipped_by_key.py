"""flipped_by_key finds every (task, metric)'s flipped items at once, exactly as flipped_items finds one's."""

from __future__ import annotations

import numpy as np
import pandas as pd

from captrack.analysis.transitions import flipped_by_key, flipped_items


def _items(rng: np.random.Generator, n: int) -> pd.DataFrame:
    return pd.DataFrame({
        "task": rng.choice(["a", "b", "c"], n), "metric": rng.choice(["acc", "harm"], n),
        "replicate": rng.integers(0, 2, n).astype(np.int32), "doc_hash": [f"h{i}" for i in rng.integers(0, 50, n)],
        "occ": rng.integers(1, 3, n), "doc_id": rng.integers(0, 40, n), "base": rng.integers(0, 2, n).astype(float),
        "variant": rng.integers(0, 2, n).astype(float), "base_run": "r1", "variant_run": "r2",
    })


def test_the_same_items_counts_and_order_as_one_key_at_a_time() -> None:
    rng = np.random.default_rng(0)
    for n in (0, 1, 7, 120, 400):
        items = _items(rng, n)
        lower = {("a", "acc"): False, ("a", "harm"): True, ("b", "acc"): False, ("c", "harm"): True, ("d", "acc"): False}
        for limit in (1, 5, 50):
            found = flipped_by_key(items, lower, limit)
            assert set(found) == set(lower)
            for (task, metric), is_lower in lower.items():
                expected, count = flipped_items(items, task, metric, is_lower, limit)
                pd.testing.assert_frame_equal(found[(task, metric)][0], expected)
                assert found[(task, metric)][1] == count
