"""Bootstrap resample counts drawn in blocks of resamples equal the counts of one draw (memory bounded, stream kept)."""

from __future__ import annotations

import numpy as np
import pytest

from captrack.analysis import bootstrap
from captrack.analysis.stats import bootstrap_indices


@pytest.mark.parametrize(("n_items", "n_resamples"), [(1, 50), (7, 200), (1000, 37), (0, 10)])
def test_counts_drawn_in_blocks_equal_one_draw(n_items: int, n_resamples: int, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = bootstrap._draw_counts("task", n_items, n_resamples, seed=3)
    monkeypatch.setattr(bootstrap, "_DRAW_CHUNK", 3 * max(n_items, 1))  # blocks of three resamples
    blocks = bootstrap._draw_counts("task", n_items, n_resamples, seed=3)
    assert blocks.dtype == whole.dtype == np.uint8
    assert np.array_equal(blocks, whole)
    # and both are the counts of the one index matrix a single draw makes
    import zlib
    rng = np.random.default_rng([3, zlib.crc32(b"task"), n_items])
    idx = bootstrap_indices(n_items, n_resamples, rng)
    expected = np.stack([np.bincount(row, minlength=n_items) for row in idx]) if n_items else whole
    assert np.array_equal(whole, expected)


def test_counts_too_large_for_a_byte_become_float(monkeypatch: pytest.MonkeyPatch) -> None:
    """A count above 255 (possible only with few items) switches the whole matrix to float32, every block kept."""
    monkeypatch.setattr(bootstrap, "_DRAW_CHUNK", 1)
    counts = bootstrap._draw_counts("one", 1, 4, seed=0)
    assert counts.dtype == np.uint8 and counts.tolist() == [[1]] * 4
    monkeypatch.setattr(bootstrap, "bootstrap_indices", lambda n, b, rng: np.zeros((b, 300), dtype=np.int32))
    wide = bootstrap._draw_counts("wide", 300, 4, seed=0)
    assert wide.dtype == np.float32 and wide[:, 0].tolist() == [300.0] * 4 and wide[:, 1:].sum() == 0
