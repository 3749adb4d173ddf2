"""One side's calibration inputs for a (variant, task), kept as small as the statistics allow.

Calibration drift (captrack.analysis.distribution.calibration_table) runs its bootstrap task by task once
every variant is read, so a comparison keeps these for every multiple-choice item it saw. Per item it
keeps the confidence bin, correct − confidence as the float32 resample product reads it, and the Brier
score as float32 (9 bytes, not three float64s: 160 MB less per side at ten million items); the
sample's own ECE and mean Brier score, which read the float64 values, are computed when the side is made.
The numbers are those of computing everything at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from captrack.analysis.bootstrap import ResampleMatrix, products

__all__ = ["CalibrationSide"]

Array = NDArray[np.float64]


def _gap_matrix(bins: NDArray[np.integer[Any]], gap_values: NDArray[np.floating[Any]], n_bins: int,
                dtype: np.dtype[Any]) -> NDArray[Any]:
    """Items x bins: each item's correct − confidence in its bin's column. Bins are right-closed, (e_{j-1}, e_j],
    with the first closed: scikit-learn's `calibration_curve`."""
    gap = np.zeros((len(bins), n_bins), dtype=dtype)
    gap[np.arange(len(bins)), bins] = gap_values
    return gap


def _ece(binned: NDArray[Any], drawn: NDArray[np.floating[Any]]) -> Array:
    """ECE under each row of item multiplicities (a resample; a row of ones = the sample), from that row times the
    gap matrix (`binned`) and the row's sum (`drawn`)."""
    return np.asarray(np.abs(binned).sum(axis=1) / drawn, dtype=float)


@dataclass(frozen=True)
class CalibrationSide:
    """One side (base or variant) of a group's items: the sample's ECE and mean Brier score, and per item what
    the bootstrap reads (`resampled`)."""

    n_bins: int
    ece: float
    brier: float
    bins: NDArray[np.integer[Any]]
    gap: NDArray[np.float32]
    brier32: NDArray[np.float32]

    @classmethod
    def of(cls, conf: Array, correct: Array, brier: Array, n_bins: int) -> CalibrationSide:
        """The side of items with top-choice confidence `conf`, correctness `correct` and Brier score `brier`."""
        bins = np.searchsorted(np.linspace(0.0, 1.0, n_bins + 1)[1:-1], conf, side="left")
        diff = correct - conf
        ones = np.ones((1, len(conf)))
        ece = float(_ece(ones @ _gap_matrix(bins, diff, n_bins, ones.dtype), ones.sum(axis=1))[0])
        return cls(n_bins, ece, float(brier.mean()), bins.astype(np.uint8 if n_bins <= 256 else np.int32),
                   diff.astype(np.float32), brier.astype(np.float32))

    def resampled(self, counts: ResampleMatrix, drawn: NDArray[np.float32]) -> tuple[Array, NDArray[Any]]:
        """ECE and mean Brier score under each resample (rows of `counts`, `drawn` their sums; a large task's
        counts made a block of rows at a time, captrack.analysis.bootstrap.RowBlocks, once for both)."""
        binned, brier = products(counts, _gap_matrix(self.bins, self.gap, self.n_bins, counts.dtype), self.brier32)
        return _ece(binned, drawn), brier / len(self.bins)
