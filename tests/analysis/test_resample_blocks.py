"""Bootstrap resample counts drawn in blocks of resamples equal the counts of one draw (memory bounded, stream kept)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from captrack.analysis import bootstrap
from captrack.analysis.stats import bootstrap_indices


@pytest.mark.parametrize(("n_items", "n_resamples"), [(1, 50), (7, 200), (1000, 37), (0, 10), (511, 20), (512, 20)])
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


@pytest.mark.parametrize("n_items", [300, 600])  # counted a block at a time / row by row (bootstrap._ROW_BY_ROW)
def test_counts_too_large_for_a_byte_become_float(n_items: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A count above 255 (possible only with few items) switches the whole matrix to float32, every block kept."""
    monkeypatch.setattr(bootstrap, "_DRAW_CHUNK", 1)
    counts = bootstrap._draw_counts("one", 1, 4, seed=0)
    assert counts.dtype == np.uint8 and counts.tolist() == [[1]] * 4
    monkeypatch.setattr(bootstrap, "bootstrap_indices", lambda n, b, rng: np.zeros((b, n_items), dtype=np.int32))
    wide = bootstrap._draw_counts("wide", n_items, 4, seed=0)
    assert wide.dtype == np.float32 and wide[:, 0].tolist() == [float(n_items)] * 4 and wide[:, 1:].sum() == 0


# A large task's statistics (above bootstrap.LARGE_COUNTS) multiply its resample counts a block of rows at a time
# (issue 44). Forced here on a small task by lowering the threshold: 200 resamples in blocks of 64 rows.

N_ITEMS, N_RESAMPLES = 300, 200


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Rows that bootstrap.RowBlocks build (a statistic took the blocked path, not only may take it)."""
    counted = {"rows": 0}
    original = bootstrap.RowBlocks.__init__

    def init(self: bootstrap.RowBlocks, shape: tuple[int, int], dtype: type[np.generic],
             build: Callable[[slice], np.ndarray]) -> None:
        def build_counted(rows: slice) -> np.ndarray:
            block = build(rows)
            counted["rows"] += len(block)
            return block
        original(self, shape, dtype, build_counted)

    monkeypatch.setattr(bootstrap.RowBlocks, "__init__", init)
    return counted


def _make_large(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every task of more than 1,000 counts is large, in blocks of 64 rows."""
    monkeypatch.setattr(bootstrap, "LARGE_COUNTS", 1000)
    monkeypatch.setattr(bootstrap, "_BLOCK_ELEMENTS", 64 * N_ITEMS)
    assert [(s.start, s.stop) for s in bootstrap.row_blocks(N_RESAMPLES, N_ITEMS)] == [
        (0, 64), (64, 128), (128, 192), (192, 200)]


def test_a_small_task_is_one_block_and_a_large_one_blocks_of_whole_row_groups() -> None:
    assert bootstrap.row_blocks(1000, 5000) == [slice(0, 1000)]  # a million records' tasks: the whole matrix
    blocks = bootstrap.row_blocks(1000, 50_000)  # ten million's: 400 MB as float64 at once before issue 44
    assert len(blocks) > 1 and all((s.stop - s.start) % 64 == 0 for s in blocks[:-1])
    assert blocks[0].start == 0 and blocks[-1].stop == 1000
    assert [s.start for s in blocks[1:]] == [s.stop for s in blocks[:-1]]


def _items(binary: bool) -> bootstrap.Items:
    rng = np.random.default_rng(5)

    def values() -> np.ndarray:
        return (rng.random(N_ITEMS) < 0.6).astype(float) if binary else rng.random(N_ITEMS)
    return {(variant, task, "acc"): (values(), values()) for variant in ("a", "b") for task in ("t1", "t2")}


@pytest.mark.parametrize("binary", [True, False])
def test_drift_resamples_in_blocks_equal_the_whole_matrix(binary: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    items = _items(binary)
    whole = bootstrap.bootstrap_drift(items, N_RESAMPLES, seed=1)
    _make_large(monkeypatch)
    casts: list[int] = []
    original = bootstrap.row_blocks
    monkeypatch.setattr(bootstrap, "row_blocks", lambda rows, cols: casts.append(rows) or original(rows, cols))
    blocks = bootstrap.bootstrap_drift(items, N_RESAMPLES, seed=1)
    assert casts and list(blocks) == list(whole)
    for key, samples in whole.items():
        if binary:  # sums of whole numbers: the same bits in any order
            assert np.array_equal(blocks[key], samples, equal_nan=True)
        else:
            np.testing.assert_allclose(blocks[key], samples, rtol=1e-12)


def test_contrasts_in_blocks_equal_the_whole_matrix(monkeypatch: pytest.MonkeyPatch, built: dict[str, int]) -> None:
    from captrack.analysis.contrasts import item_contrasts
    items = {key: value for key, value in _items(binary=True).items() if key[1] == "t1"}
    transitions = pd.DataFrame({"variant": ["a", "b"], "task": "t1", "metric": "acc", "k": [4, 4],
                                "forgetting_adj": [0.1, 0.2]})
    rng = np.random.default_rng(2)
    one_minus_bc = {(v, "t1"): rng.random(N_ITEMS) for v in ("a", "b")}
    pairs = pd.DataFrame({"algorithm_a": ["SFT"], "algorithm_b": ["DPO"]})

    def run() -> pd.DataFrame:
        return item_contrasts(pairs, {"a": "SFT", "b": "DPO"}, items, transitions, one_minus_bc, N_RESAMPLES, 0)
    whole = run()
    assert built["rows"] == 0
    _make_large(monkeypatch)
    pd.testing.assert_frame_equal(run(), whole, rtol=1e-12)
    assert built["rows"] > 0


def test_calibration_in_blocks_equals_the_whole_matrix(monkeypatch: pytest.MonkeyPatch, built: dict[str, int]) -> None:
    from captrack.analysis.calibration_sides import CalibrationSide
    from captrack.analysis.distribution import calibration_table
    rng = np.random.default_rng(3)

    def side() -> CalibrationSide:
        conf = rng.uniform(0.25, 1.0, N_ITEMS)
        return CalibrationSide.of(conf, (rng.random(N_ITEMS) < conf).astype(float), rng.random(N_ITEMS), 10)
    groups = [((variant, "SFT", "t1"), {"base": side(), "variant": side()}) for variant in ("a", "b")]
    whole = calibration_table(groups, n_resamples=N_RESAMPLES, seed=0)
    assert built["rows"] == 0
    _make_large(monkeypatch)
    pd.testing.assert_frame_equal(calibration_table(groups, n_resamples=N_RESAMPLES, seed=0), whole, rtol=1e-6)
    assert built["rows"] > 0


def test_a_large_tasks_counts_are_not_kept_by_the_shared_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    _make_large(monkeypatch)
    with bootstrap.shared_resamples():
        bootstrap._shared_counts("large", N_ITEMS, N_RESAMPLES, 0)
        bootstrap._shared_counts("small", 3, 100, 0)
        assert [key[0] for key in bootstrap._CACHE[-1].entries] == ["small"]


class _Counted(np.ndarray):
    """A matrix that counts how often it is multiplied."""

    multiplied = 0

    def __matmul__(self, other: object) -> np.ndarray:
        type(self).multiplied += 1
        return np.asarray(self) @ other


def test_products_asked_again_are_made_once_and_handed_out_as_copies() -> None:
    """Inside shared_resamples, the same matrix and operands (a task's base side, asked by each variant) are
    multiplied once; other operands, another matrix or an operand whose bytes changed are multiplied anew."""
    rng = np.random.default_rng(5)
    matrix = rng.integers(0, 3, (40, 30)).astype(np.float32).view(_Counted)
    base, variant = rng.random((30, 4)).astype(np.float32), rng.random(30).astype(np.float32)
    with bootstrap.shared_resamples():
        first = bootstrap.products(matrix, base, variant)
        first[0][:] = -1.0  # what a caller does with its copy changes nothing kept
        again = bootstrap.products(matrix, base.copy(), variant.copy())
        assert _Counted.multiplied == 2
        np.testing.assert_array_equal(again[0], np.asarray(matrix) @ base)
        changed = variant.copy()
        changed[0] = -0.0 if changed[0] == 0.0 else 0.0
        bootstrap.products(matrix, base, changed)
        other = matrix.copy().view(_Counted)
        bootstrap.products(other, base, variant)
        assert _Counted.multiplied == 6
    assert np.array_equal(bootstrap.products(matrix, base, variant)[1], np.asarray(matrix) @ variant)  # outside: made
    assert _Counted.multiplied == 8
