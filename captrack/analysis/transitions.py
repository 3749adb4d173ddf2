"""Sample-wise transitions (Harmon et al., 2025): 1→0 forgetting, 0→1 backward transfer."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.item_rows import key_codes
from captrack.analysis.stats import sign_flip_pvalue

__all__ = ["FlippedRows", "Transitions", "chance_expected", "chance_weight", "count_transitions", "flipped_by_key",
           "flipped_items", "flipped_rows", "seed_item_outcomes", "seed_item_tests"]


@dataclass(frozen=True)
class Transitions:
    """Counts of paired binary outcomes and the rates derived from them.

    ``k`` is the number of options for multiple choice (None for free-form answers, where
    guessing explains nothing and the adjusted rates equal the raw ones). When the items' option
    counts differ, ``weight`` is the mean over items of 1/(k_i − 1) (see :func:`chance_weight`) and
    is used instead of 1/(k − 1); ``k`` is then only the count reported.
    """

    n_11: int
    n_10: int
    n_01: int
    n_00: int
    k: int | None = None
    weight: float | None = None

    @property
    def n(self) -> int:
        """Paired items."""
        return self.n_11 + self.n_10 + self.n_01 + self.n_00

    @property
    def acc_pre(self) -> float:
        """Base accuracy over the paired items."""
        return (self.n_11 + self.n_10) / self.n if self.n else math.nan

    @property
    def acc_post(self) -> float:
        """Variant accuracy over the paired items."""
        return (self.n_11 + self.n_01) / self.n if self.n else math.nan

    @property
    def forgetting(self) -> float:
        """F = n10 / N."""
        return self.n_10 / self.n if self.n else math.nan

    @property
    def backward_transfer(self) -> float:
        """BT = n01 / N."""
        return self.n_01 / self.n if self.n else math.nan

    @property
    def expected_by_chance(self) -> float:
        """E = (1 − acc_pre)(1 − acc_post) / (k − 1) (per-item k: times the mean of 1/(k_i − 1))."""
        if self.weight is not None:
            if math.isnan(self.acc_pre) or math.isnan(self.acc_post):
                return 0.0
            return (1.0 - self.acc_pre) * (1.0 - self.acc_post) * self.weight
        return chance_expected(self.acc_pre, self.acc_post, self.k)

    @property
    def forgetting_adj(self) -> float:
        """max(F − E, 0): Harmon et al.'s (2025) published form, kept for comparison with it. Biased upward: the
        clip adds 0.3–2.3 points under pure guessing, and E assumes independent knowledge (forgetting_excess
        has neither bias)."""
        return max(self.forgetting - self.expected_by_chance, 0.0) if self.n else math.nan

    @property
    def backward_transfer_adj(self) -> float:
        """max(BT − E, 0)."""
        return max(self.backward_transfer - self.expected_by_chance, 0.0) if self.n else math.nan

    @property
    def chance_weight_value(self) -> float:
        """1/(k − 1) (per-item k: the mean of 1/(k_i − 1)); 0 without options (free-form answers)."""
        if self.weight is not None:
            return self.weight
        return 1.0 / (self.k - 1) if self.k is not None and self.k >= 2 else 0.0

    @property
    def forgetting_excess(self) -> tuple[float, float, float]:
        """F − E₀₀ unclipped, with its 95% CI: (estimate, low, high).

        E₀₀ = n00/(N(k − 1)) is the chance part of F estimated from the items both models got wrong: under
        know-or-guess it is unbiased whatever the two models know in common (the published E assumes their
        knowledge independent, and reads a model that forgot nothing as forgetting a·F_chance). The CI is a
        Wald interval of the per-item terms 1[1→0] − 1[0→0]/(k − 1).
        """
        return self._excess(self.n_10)

    @property
    def backward_transfer_excess(self) -> tuple[float, float, float]:
        """BT − E₀₀ unclipped, with its 95% CI (see forgetting_excess)."""
        return self._excess(self.n_01)

    def _excess(self, flips: int) -> tuple[float, float, float]:
        if not self.n:
            return math.nan, math.nan, math.nan
        w = self.chance_weight_value
        mean = (flips - w * self.n_00) / self.n
        second = (flips + w * w * self.n_00) / self.n
        return _wald95(mean, second, self.n)

    @property
    def forgetting_max(self) -> float:
        """Ceiling of F_adj: max((k·acc_pre − 1)/(k − 1), 0); acc_pre without guessing."""
        return _ceiling(self.acc_pre, self.k)

    @property
    def backward_transfer_max(self) -> float:
        """Ceiling of BT_adj: max((k·acc_post − 1)/(k − 1), 0)."""
        return _ceiling(self.acc_post, self.k)


def _wald95(mean: float, second: float, n: int) -> tuple[float, float, float]:
    """(mean, low, high): the 95% Wald interval of a mean of n terms from their mean and mean square."""
    half = 1.959963984540054 * math.sqrt(max(second - mean * mean, 0.0) / n)
    return mean, mean - half, mean + half


def seed_item_outcomes(items: pd.DataFrame) -> dict[tuple[str, str], tuple[NDArray[np.bool_], NDArray[np.bool_]]]:
    """Per (task, metric) of paired items with several replicates (seeds): the base's and the variant's outcomes
    (value > 0.5) as (items, seeds) arrays, of the items every seed scored (those item_means averages)."""
    if not len(items):
        return {}
    wide = items.pivot_table(index=["task", "metric", "doc_hash", "occ"], columns="replicate",
                             values=["base", "variant"], aggfunc="first", observed=True).dropna()
    out = {}
    for (task, metric), frame in wide.groupby(level=["task", "metric"], sort=False):
        out[(str(task), str(metric))] = (frame["base"].to_numpy(dtype=float) > 0.5,
                                         frame["variant"].to_numpy(dtype=float) > 0.5)
    return out


def seed_item_tests(before: NDArray[np.bool_], after: NDArray[np.bool_], weight: float) -> dict[str, float]:
    """transitions.csv's tests of several seeds on item means (n = items), not on seed × item pairs.

    Seeds of one item are not independent (the variant's change, and what both models know, is the item's), so
    pooling them as pairs made `mcnemar_p` 9–13% false positives at 3–5 seeds and the F − E₀₀ interval cover
    85–93% (statistics audit 2026-11-29, §13). Here `mcnemar_p` is the exact sign-flip test of each item's
    change summed over seeds (stats.sign_flip_pvalue: McNemar's exact test at one seed), and F − E₀₀ / BT − E₀₀
    with their 95% CIs are Wald intervals of the per-item means over seeds of 1[1→0] − w·1[0→0] (1[0→1] − …).

    Args:
        before, after: (items, seeds) good outcomes of the base and the variant, oriented (True: the good one).
        weight: w, the chance weight 1/(k − 1) (Transitions.chance_weight_value).
    """
    n = before.shape[0]
    if not n:
        return {"mcnemar_p": math.nan} | {f"{name}{end}": math.nan for name in ("forgetting_excess",
                "backward_transfer_excess") for end in ("", "_ci_low", "_ci_high")}
    both_wrong = (~before & ~after).mean(axis=1)
    out: dict[str, float] = {"mcnemar_p": sign_flip_pvalue(after.sum(axis=1) - before.sum(axis=1))}
    for name, flips in (("forgetting_excess", before & ~after), ("backward_transfer_excess", ~before & after)):
        terms = flips.mean(axis=1) - weight * both_wrong
        mean, low, high = _wald95(float(terms.mean()), float((terms * terms).mean()), n)
        out |= {name: mean, f"{name}_ci_low": low, f"{name}_ci_high": high}
    return out


def chance_expected(acc_pre: float, acc_post: float, k: int | None) -> float:
    """Expected share of items that flip by guessing alone; 0 without a finite k ≥ 2."""
    if k is None or k < 2 or math.isnan(acc_pre) or math.isnan(acc_post):
        return 0.0
    return (1.0 - acc_pre) * (1.0 - acc_post) / (k - 1)


def chance_weight(k: NDArray[np.float64]) -> float:
    """Mean over items of 1/(k_i − 1): an item without options (k NaN) or with k < 2 adds 0.

    E for items with different option counts is the mean of the per-item expectations,
    E = mean_i (1 − acc_pre)(1 − acc_post)/(k_i − 1) = (1 − acc_pre)(1 − acc_post) · chance_weight(k);
    with one k for every item this is (1 − acc_pre)(1 − acc_post)/(k − 1). NaN for no items.
    """
    values = np.asarray(k, dtype=float)
    if values.size == 0:
        return math.nan
    usable = np.isfinite(values) & (values >= 2)
    inverse = np.zeros(values.size)
    inverse[usable] = 1.0 / (values[usable] - 1.0)
    return float(inverse.mean())


def _ceiling(acc: float, k: int | None) -> float:
    if math.isnan(acc):
        return math.nan
    if k is None or k < 2:
        return acc
    return max((k * acc - 1.0) / (k - 1.0), 0.0)


def count_transitions(
    base: NDArray[np.float64], variant: NDArray[np.float64], k: int | None = None
) -> Transitions:
    """Count paired 0/1 outcomes (values > 0.5 count as correct); NaN pairs must be removed first."""
    before = np.asarray(base) > 0.5
    after = np.asarray(variant) > 0.5
    return Transitions(
        n_11=int(np.count_nonzero(before & after)),
        n_10=int(np.count_nonzero(before & ~after)),
        n_01=int(np.count_nonzero(~before & after)),
        n_00=int(np.count_nonzero(~before & ~after)),
        k=k,
    )


def flipped_items(
    items: pd.DataFrame, task: str, metric: str, lower_is_better: bool = False, limit: int = 50
) -> tuple[pd.DataFrame, int]:
    """The first `limit` forgotten / gained items of (task, metric) among paired `items`, and how many flipped in all.

    Args:
        items: paired items (captrack.results.pairing.PairedItems.items).
        lower_is_better: 1 is the bad outcome (e.g. a harm rate), so 1→0 is a gain.

    Returns:
        A frame with doc_id, doc_hash, change ('forgotten' | 'gained'), replicate, base_run, variant_run
        (texts as Python strings), forgotten first, then by replicate and doc id.
    """
    rows = items[(items["task"] == task) & (items["metric"] == metric)]
    good_base = (rows["base"] < 0.5) if lower_is_better else (rows["base"] > 0.5)
    good_variant = (rows["variant"] < 0.5) if lower_is_better else (rows["variant"] > 0.5)
    flipped = rows[good_base != good_variant].assign(
        change=np.where(good_base[good_base != good_variant], "forgotten", "gained")
    )
    flipped = flipped.sort_values(["change", "replicate", "doc_id"], ascending=[False, True, True], kind="stable")
    columns = ["doc_id", "doc_hash", "change", "replicate", "base_run", "variant_run"]
    return _texts_as_objects(flipped[columns].head(limit).reset_index(drop=True)), len(flipped)


def _texts_as_objects(frame: pd.DataFrame) -> pd.DataFrame:
    """The text columns of a flipped-items frame held as Python strings (object dtype): slicing the frame per
    (task, metric) then costs no Arrow array rebuild per column and slice."""
    return frame.astype({name: object for name in ("doc_hash", "change", "base_run", "variant_run")})


FLIPPED_COLUMNS = ["doc_id", "doc_hash", "change", "replicate", "base_run", "variant_run"]


def flipped_by_key(items: pd.DataFrame, lower: Mapping[tuple[str, str], bool], limit: int = 50
                   ) -> dict[tuple[str, str], tuple[pd.DataFrame, int]]:
    """`flipped_items` of every (task, metric) in `lower` (True: lower is better), all found in one pass over the items.

    Keys with no flipped item map to an empty frame and 0.
    """
    out: dict[tuple[str, str], tuple[pd.DataFrame, int]] = {}
    if not lower:
        return out
    found = flipped_rows(items, lower)
    flipped = _texts_as_objects(items.iloc[found.order][FLIPPED_COLUMNS[:2] + FLIPPED_COLUMNS[3:]].assign(
        change=np.where(found.forgotten, "forgotten", "gained"))[FLIPPED_COLUMNS])
    empty = _renumbered(flipped.iloc[:0])
    for key, (first, end) in found.spans.items():
        out[key] = (_renumbered(flipped.iloc[first:min(end, first + limit)]), end - first)
    return {key: out.get(key, (empty, 0)) for key in lower}


@dataclass(frozen=True)
class FlippedRows:
    """The flipped items of paired items, as `flipped_items` orders them, by position: ``order`` the rows' positions,
    ``forgotten`` whether each was forgotten (else gained), ``spans`` (task, metric) -> its (start, end) in ``order``."""

    order: NDArray[np.intp]
    forgotten: NDArray[np.bool_]
    spans: dict[tuple[str, str], tuple[int, int]]


def flipped_rows(items: pd.DataFrame, lower: Mapping[tuple[str, str], bool]) -> FlippedRows:
    """Where the flipped items of each (task, metric) in `lower` are among `items`, in `flipped_items`' order: what
    reading their texts needs, without building a frame per (task, metric)."""
    codes, keys = key_codes(items)
    direction = np.array([lower.get(key, np.nan) for key in keys], dtype=float)[codes]
    base, variant = items["base"].to_numpy(dtype=float), items["variant"].to_numpy(dtype=float)
    good_base = np.where(direction == 1.0, base < 0.5, base > 0.5)
    good_variant = np.where(direction == 1.0, variant < 0.5, variant > 0.5)
    rows = np.flatnonzero(~np.isnan(direction) & (good_base != good_variant))
    # flipped_items' order: gained before forgotten (change, descending), then replicate and doc id; ties as the items are
    order = rows[np.lexsort((rows, items["doc_id"].to_numpy()[rows], items["replicate"].to_numpy()[rows],
                             good_base[rows], codes[rows]))]
    starts = np.searchsorted(codes[order], np.arange(len(keys) + 1))
    spans = {key: (int(starts[code]), int(starts[code + 1])) for code, key in enumerate(keys) if starts[code + 1] > starts[code]}
    return FlippedRows(order, good_base[order], spans)


def _renumbered(rows: pd.DataFrame) -> pd.DataFrame:
    """`rows` (a slice) indexed 0..n-1, as reset_index(drop=True) gives, without copying the data."""
    rows.index = pd.RangeIndex(len(rows))
    return rows
