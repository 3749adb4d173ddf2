"""The typed input of the distribution diagnostics: paired multiple-choice items as matrices.

`ChoiceFrame` holds one row per item (keys variant, algorithm, task, doc_hash, gold) and the two
sides' per-option loglikelihoods as NaN-padded (n, k_max) matrices beside each item's k, so the
diagnostics work on arrays instead of one Python list per item. A DataFrame with list columns
``base_ll`` / ``variant_ll`` (captrack.analysis.distribution.INPUT_COLUMNS) is accepted too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.errors import InputError

__all__ = ["ChoiceFrame", "as_matrix", "check_gold", "choice_blocks"]

Array = NDArray[np.float64]
Block = tuple[pd.Index, Array, Array, NDArray[np.int64]]


@dataclass(frozen=True)
class ChoiceFrame:
    """Paired multiple-choice items: ``keys`` (variant, algorithm, task, doc_hash, gold; a RangeIndex),
    each item's option count ``k`` and the NaN-padded loglikelihood matrices of base and variant."""

    keys: pd.DataFrame
    k: NDArray[np.int64]
    base_ll: Array
    variant_ll: Array

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def empty(self) -> bool:
        """True without items."""
        return len(self.keys) == 0

    def take(self, rows: NDArray[np.int64]) -> ChoiceFrame:
        """The items at positions `rows`, with their keys' index kept."""
        return ChoiceFrame(self.keys.iloc[rows], self.k[rows], self.base_ll[rows], self.variant_ll[rows])

    @staticmethod
    def concat(parts: Sequence[ChoiceFrame]) -> ChoiceFrame:
        """The items of `parts` one after another (matrices padded to the widest k), with a fresh index."""
        width = max((p.base_ll.shape[1] for p in parts), default=0)

        def pad(m: Array) -> Array:
            return m if m.shape[1] == width else np.hstack([m, np.full((m.shape[0], width - m.shape[1]), np.nan)])

        return ChoiceFrame(pd.concat([p.keys for p in parts], ignore_index=True),
                           np.concatenate([p.k for p in parts]) if parts else np.empty(0, dtype=np.int64),
                           np.vstack([pad(p.base_ll) for p in parts]) if parts else np.empty((0, 0)),
                           np.vstack([pad(p.variant_ll) for p in parts]) if parts else np.empty((0, 0)))


def as_matrix(rows: Sequence[Sequence[float]] | Array, what: str) -> Array:
    """A (n, k) float matrix of loglikelihoods; raises ValueError on NaN, +inf or a row without a finite value."""
    ll = np.asarray(rows, dtype=float)
    if ll.ndim != 2 or ll.shape[1] < 1:
        raise ValueError(f"{what}: expected one loglikelihood per option, got shape {ll.shape}")
    if np.isnan(ll).any() or np.isposinf(ll).any() or not np.isfinite(ll).any(axis=1).all():
        raise ValueError(f"{what}: loglikelihoods must be finite or -inf, with at least one finite per item")
    return ll


def check_gold(gold: NDArray[np.int64], k: int) -> None:
    """Raise ValueError when a gold index is outside 0..k-1."""
    if gold.size and (gold.min() < 0 or gold.max() >= k):
        raise ValueError(f"gold index out of range for {k} options: {gold[(gold < 0) | (gold >= k)][:3].tolist()}")


def _where(keys: pd.DataFrame, k: int) -> str:
    return f"task {keys['task'].iloc[0]!r}, doc_hash {keys['doc_hash'].iloc[0]!r} (and {len(keys) - 1} more with {k} options)"


def choice_blocks(data: pd.DataFrame | ChoiceFrame, rows: NDArray[np.int64] | None = None) -> Iterator[Block]:
    """Items grouped by option count (ascending; input order within each), as (index, base, variant, gold).

    With `rows` (positions in a ChoiceFrame), only those items, as if the frame had been taken at `rows` first.

    Raises:
        InputError: bad loglikelihoods, mismatched option counts, gold out of range (the first item named).
    """
    if isinstance(data, ChoiceFrame):
        rows = np.arange(len(data)) if rows is None else rows
        ks, gold_all = data.k[rows], data.keys["gold"].to_numpy(dtype=np.int64)
        for k in np.unique(ks):
            chosen = rows[ks == k]
            try:
                base = as_matrix(data.base_ll[chosen, :k], "base_ll")
                variant = as_matrix(data.variant_ll[chosen, :k], "variant_ll")
                gold = gold_all[chosen]
                check_gold(gold, int(k))
            except (ValueError, TypeError) as exc:
                raise InputError(f"{_where(data.keys.iloc[chosen], int(k))}: {exc}; give one loglikelihood per option for both, "
                                 "gold in 0..k-1") from exc
            yield data.keys.index[chosen], base, variant, gold
        return
    for k, rows_k in data.groupby("_k", sort=True):
        try:
            base = as_matrix(list(rows_k["base_ll"]), "base_ll")
            variant = as_matrix([list(v) for v in rows_k["variant_ll"]], "variant_ll")
            if variant.shape != base.shape:
                raise ValueError("base and variant list different numbers of options")
            gold = rows_k["gold"].to_numpy(dtype=np.int64)
            check_gold(gold, base.shape[1])
        except (ValueError, TypeError) as exc:
            raise InputError(f"{_where(rows_k, int(k))}: {exc}; give one loglikelihood per option for both, gold in 0..k-1") from exc
        yield rows_k.index, base, variant, gold
