"""Distribution-level diagnostics of multiple-choice items: collapse vs drift, erosion, calibration.

For a multiple-choice item lm-eval logs one loglikelihood per option (in ``filtered_resps``, as
``[["-3.2", "False"], ...]`` strings). A softmax over the options gives the model's distribution over
them: P for the base, Q for the variant. The answer is the argmax of the loglikelihoods (the first
one on ties, as lm-eval's ``acc``); â is the base's answer and g the gold option; k options.

Per item:

- ``mass_retained`` = Q[â], the probability the variant still gives to the base's answer.
- ``bhattacharyya`` = Σᵢ √(Pᵢ Qᵢ) ∈ [0, 1], the overlap of P and Q (1 iff identical).
- ``gold_prob_base`` = P[g], ``gold_prob_variant`` = Q[g], ``gold_prob_change`` = Q[g] − P[g].
- ``flip_margin_nats`` = ℓ_Q(variant answer) − ℓ_Q(â) ≥ 0: by how many nats of the variant's
  loglikelihood the base's answer now trails the variant's choice (0 when they agree).
- ``transition``: "11", "10", "01" or "00" (base correct, variant correct).

A forgotten (1→0) item — base correct, variant wrong — is exactly one of:

- ``collapse`` (mass forgetting): Q[â] < collapse_ratio / k, i.e. the variant gives the base's answer
  less than ``collapse_ratio`` times what a uniform guess would (0.10 with four options);
- ``drift``: not a collapse, and flip_margin_nats ≤ ``tie_nats``: the base's answer keeps its mass and
  loses a near tie to the variant's choice;
- ``shift``: neither — the base's answer kept some mass but was clearly overtaken.

With the defaults collapse and a near tie cannot coincide: the variant's choice has Q ≥ 1/k, so a
collapsed answer trails it by at least log(1 / collapse_ratio) ≈ 0.92 nats > ``tie_nats``.

An item is ``eroding`` when its correctness did not change (11 or 00) but its gold probability fell
by more than ``erosion_delta``: P[g] − Q[g] > erosion_delta.

Thresholds (`Thresholds`, defaults and why):

- ``collapse_ratio = 0.4``: "almost no mass" relative to chance, so tasks with 2 to 10 options are
  treated alike (threshold 0.2, 0.1 and 0.04 for k = 2, 4, 10).
- ``tie_nats = 0.5``: a near tie is a loglikelihood gap of at most half a nat, i.e. the winner is at
  most e^0.5 ≈ 1.65 times as likely as the base's answer — the scale lm-eval logs margins in.
- ``erosion_delta = 0.2``: a fifth of the probability mass lost on the gold answer; identical models
  give exactly 0 and fp noise in logged loglikelihoods is orders of magnitude smaller.

Calibration uses the top choice: confidence = max P, accuracy = 1[argmax = g]. ECE = Σ_b (n_b / N)·
|acc_b − conf_b| over ``n_bins`` equal-width confidence bins (right-closed, as scikit-learn's
``calibration_curve``); Brier = mean over items of Σᵢ (Pᵢ − 1[i = g])², the multi-category score in
[0, 2] (scikit-learn's ``brier_score_loss`` with ``scale_by_half=False``). Both are computed here in
vectorised form so that the paired bootstrap stays cheap; the tests check them against scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.bootstrap import ResampleMatrix, RowBlocks, resample_matrix
from captrack.analysis.calibration_sides import CalibrationSide
from captrack.analysis.choice_frame import ChoiceFrame, as_matrix, check_gold, choice_blocks
from captrack.analysis.stats import percentile_ci
from captrack.errors import InputError

__all__ = [
    "CALIBRATION_COLUMNS",
    "INPUT_COLUMNS",
    "ITEM_COLUMNS",
    "SUMMARY_COLUMNS",
    "CalibrationGroup",
    "Thresholds",
    "aggregate_by_algorithm",
    "calibration",
    "calibration_inputs",
    "calibration_table",
    "choice_probs",
    "diagnose",
    "item_diagnostics",
]

INPUT_COLUMNS = ("variant", "algorithm", "task", "doc_hash", "gold", "base_ll", "variant_ll")
KEYS = ["variant", "algorithm", "task"]
ITEM_COLUMNS = [
    *KEYS, "doc_hash", "gold", "n_choices", "base_answer", "variant_answer", "transition", "base_probs",
    "variant_probs", "mass_retained", "bhattacharyya", "gold_prob_base", "gold_prob_variant",
    "gold_prob_change", "flip_margin_nats", "forgetting_kind", "collapse", "drift", "shift", "eroding",
]
COUNT_COLUMNS = ["n", "n_forgotten", "n_gained", "n_collapse", "n_drift", "n_shift", "n_eroding"]
SHARE_COLUMNS = ["collapse_share", "drift_share", "shift_share", "eroding_share", "collapse_of_forgotten"]
MEAN_COLUMNS = ["mean_bc", "mean_mass_retained", "mean_gold_prob_change"]
SUMMARY_COLUMNS = [*KEYS, "k", *COUNT_COLUMNS, *SHARE_COLUMNS, *MEAN_COLUMNS]
CALIBRATION_COLUMNS = [
    *KEYS, "n", "n_bins", "ece_base", "ece_variant", "ece_change", "ece_change_ci_low", "ece_change_ci_high",
    "brier_base", "brier_variant", "brier_change", "brier_change_ci_low", "brier_change_ci_high",
]
Array = NDArray[np.float64]


@dataclass(frozen=True)
class Thresholds:
    """Thresholds of the per-item classification (see the module docstring for the rationale).

    Attributes:
        collapse_ratio: a 1→0 item is a collapse when Q[â] < collapse_ratio / k.
        tie_nats: a non-collapsed 1→0 item is drift when the base's answer trails the variant's
            choice by at most this many nats of loglikelihood.
        erosion_delta: an unflipped item is eroding when its gold probability fell by more than this.
    """

    collapse_ratio: float = 0.4
    tie_nats: float = 0.5
    erosion_delta: float = 0.2

    def __post_init__(self) -> None:
        if not 0.0 < self.collapse_ratio <= 1.0:
            raise ValueError(f"collapse_ratio must be in (0, 1], got {self.collapse_ratio}")
        if self.tie_nats < 0.0:
            raise ValueError(f"tie_nats must be >= 0, got {self.tie_nats}")
        if not 0.0 <= self.erosion_delta < 1.0:
            raise ValueError(f"erosion_delta must be in [0, 1), got {self.erosion_delta}")


_TRANSITIONS = np.array(["00", "01", "10", "11"], dtype=object)  # by 2·(base correct) + (variant correct)
_KINDS = np.array(["", "collapse", "drift", "shift"], dtype=object)


def _softmax(ll: Array) -> Array:
    """Row-wise softmax of loglikelihoods."""
    z = np.exp(ll - ll.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def choice_probs(loglikelihoods: Sequence[float]) -> np.ndarray:
    """Softmax over the options' loglikelihoods: the model's distribution over the options.

    Raises:
        ValueError: empty input, NaN, +inf, or no finite loglikelihood.
    """
    return _softmax(as_matrix([list(loglikelihoods)], "loglikelihoods"))[0]


def _block(base_ll: Array, variant_ll: Array, gold: NDArray[np.int64], th: Thresholds) -> dict[str, Any]:
    """All per-item diagnostics for items with the same number of options, as arrays."""
    n, k = base_ll.shape
    rows = np.arange(n)
    p, q = _softmax(base_ll), _softmax(variant_ll)
    a_base, a_var = base_ll.argmax(axis=1), variant_ll.argmax(axis=1)
    base_ok, var_ok = a_base == gold, a_var == gold
    retained = q[rows, a_base]
    margin = variant_ll[rows, a_var] - variant_ll[rows, a_base]
    margin = np.where(a_var == a_base, 0.0, margin)
    forgotten = base_ok & ~var_ok
    collapse = forgotten & (retained < th.collapse_ratio / k)
    drift = forgotten & ~collapse & (margin <= th.tie_nats)
    shift = forgotten & ~collapse & ~drift
    gold_p, gold_q = p[rows, gold], q[rows, gold]
    kind = _KINDS[np.select([collapse, drift, shift], [1, 2, 3], default=0)]
    return {
        "n_choices": np.full(n, k), "base_answer": a_base, "variant_answer": a_var,
        "transition": _TRANSITIONS[2 * base_ok + var_ok],
        "base_probs": p, "variant_probs": q, "mass_retained": retained,
        "bhattacharyya": np.clip(np.sqrt(p * q).sum(axis=1), 0.0, 1.0),
        "gold_prob_base": gold_p, "gold_prob_variant": gold_q, "gold_prob_change": gold_q - gold_p,
        "flip_margin_nats": margin, "forgetting_kind": kind, "collapse": collapse, "drift": drift,
        "shift": shift, "eroding": (base_ok == var_ok) & (gold_p - gold_q > th.erosion_delta),
    }


def item_diagnostics(base_ll: Sequence[float], variant_ll: Sequence[float], gold: int,
                     thresholds: Thresholds = Thresholds()) -> dict[str, Any]:
    """Diagnostics of one multiple-choice item (keys as the columns of `diagnose`'s item table).

    Args:
        base_ll: the base's loglikelihood per option.
        variant_ll: the variant's loglikelihood per option, same order.
        gold: index of the correct option.
        thresholds: classification thresholds.

    Raises:
        ValueError: different option counts, bad loglikelihoods, or a gold index out of range.
    """
    base, variant = as_matrix([list(base_ll)], "base_ll"), as_matrix([list(variant_ll)], "variant_ll")
    if base.shape != variant.shape:
        raise ValueError(f"base has {base.shape[1]} options but variant has {variant.shape[1]}")
    g = np.array([int(gold)])
    check_gold(g, base.shape[1])
    out = {}
    for key, value in _block(base, variant, g, thresholds).items():
        item = value[0]
        out[key] = item.item() if isinstance(item, np.generic) else item.tolist() if isinstance(item, np.ndarray) else item
    return out


def _validated(frame: pd.DataFrame | ChoiceFrame) -> pd.DataFrame | ChoiceFrame:
    """A DataFrame input with a fresh index and an `_k` column (raises InputError on missing columns); a ChoiceFrame as is."""
    if isinstance(frame, ChoiceFrame):
        return frame
    missing = [c for c in INPUT_COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(f"distribution diagnostics need column(s) {missing}; expected {list(INPUT_COLUMNS)}")
    out = frame.reset_index(drop=True)
    out["_k"] = [len(v) for v in out["base_ll"]]
    return out


def _with_list_columns(block: dict[str, Any], index: pd.Index) -> dict[str, Any]:
    """The block with its probability matrices as Arrow list columns (a few bytes per option, not a Python list per item)."""
    import pyarrow as pa

    out = dict(block)
    for name in ("base_probs", "variant_probs"):
        matrix = np.ascontiguousarray(block[name], dtype=np.float64)
        offsets = pa.array(np.arange(0, matrix.size + 1, max(matrix.shape[1], 1), dtype=np.int32)[: matrix.shape[0] + 1])
        lists = pa.ListArray.from_arrays(offsets, pa.array(matrix.ravel()))
        out[name] = pd.Series(pd.arrays.ArrowExtensionArray(lists), index=index)
    return out


def diagnose(frame: pd.DataFrame | ChoiceFrame, thresholds: Thresholds = Thresholds()) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-item diagnostics and their per (variant, algorithm, task) summary.

    Args:
        frame: columns variant, algorithm, task, doc_hash, gold, base_ll, variant_ll (lists of floats), or
            the same items as a ChoiceFrame.
        thresholds: classification thresholds.

    Returns:
        (items, summary): one row per input row with the keys and every `item_diagnostics` field;
        one row per (variant, algorithm, task) with counts, shares over all items, and means.

    Raises:
        InputError: missing columns, bad loglikelihoods, mismatched option counts, gold out of range.
    """
    data = _validated(frame)
    keys = (data.keys if isinstance(data, ChoiceFrame) else data)[[*KEYS, "doc_hash", "gold"]]
    blocks = [(index, _block(base, variant, gold, thresholds)) for index, base, variant, gold in choice_blocks(data)]
    columns: dict[str, Any] = {c: keys[c] for c in keys.columns} | (_item_columns(blocks, keys.index) if blocks else {})
    items = pd.DataFrame({c: columns[c] for c in ITEM_COLUMNS if c in columns}, index=keys.index).reindex(columns=ITEM_COLUMNS)
    return items, _summarise(items)


def _item_columns(blocks: list[tuple[pd.Index, dict[str, Any]]], index: pd.Index) -> dict[str, Any]:
    """Each diagnostic column over all items (in `index` order) from the blocks of items with the same option count."""
    if len(blocks) == 1 and blocks[0][0].equals(index):  # one option count, in item order: the block is the table (no copy)
        return _with_list_columns(blocks[0][1], index)
    merged = pd.concat([pd.DataFrame(_with_list_columns(block, at), index=at) for at, block in blocks]).reindex(index)
    return {c: merged[c] for c in merged.columns}


def _summarise(items: pd.DataFrame) -> pd.DataFrame:
    """Counts, shares and means of the item table per (variant, algorithm, task)."""
    if items.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    counted = items[[*KEYS, "n_choices", "collapse", "drift", "shift", "eroding", "bhattacharyya", "mass_retained",
                     "gold_prob_change"]]  # not the texts and option probabilities: a copy of the counted columns only
    g = counted.assign(_f=items.transition == "10", _g=items.transition == "01").groupby(KEYS, sort=True, dropna=False)
    out = g.agg(n=("n_choices", "size"), k=("n_choices", lambda s: int(s.mode().iloc[0])),
                n_forgotten=("_f", "sum"), n_gained=("_g", "sum"), n_collapse=("collapse", "sum"),
                n_drift=("drift", "sum"), n_shift=("shift", "sum"), n_eroding=("eroding", "sum"),
                mean_bc=("bhattacharyya", "mean"), mean_mass_retained=("mass_retained", "mean"),
                mean_gold_prob_change=("gold_prob_change", "mean")).reset_index()
    return _shares(out)[SUMMARY_COLUMNS]


def _shares(table: pd.DataFrame) -> pd.DataFrame:
    """Add the share columns to a table of counts with an `n` column."""
    out = table.copy()
    for name in ("collapse", "drift", "shift", "eroding"):
        out[f"{name}_share"] = out[f"n_{name}"] / out["n"]
    out["collapse_of_forgotten"] = out["n_collapse"] / out["n_forgotten"].where(out["n_forgotten"] > 0)
    return out


def aggregate_by_algorithm(summary: pd.DataFrame, by: Sequence[str] = ("algorithm",)) -> pd.DataFrame:
    """Pool a `diagnose` summary over variants and tasks per algorithm (or per the columns in `by`).

    Counts are summed, shares recomputed from the pooled counts, means weighted by items.
    """
    keys = list(by)
    columns = [*keys, "n_variants", "n_tasks", *COUNT_COLUMNS, *SHARE_COLUMNS, *MEAN_COLUMNS]
    if summary.empty:
        return pd.DataFrame(columns=columns)
    weighted = summary.assign(**{m: summary[m] * summary["n"] for m in MEAN_COLUMNS})
    out = weighted.groupby(keys, sort=True, dropna=False).agg(
        n_variants=("variant", "nunique"), n_tasks=("task", "nunique"),
        **{c: (c, "sum") for c in COUNT_COLUMNS + MEAN_COLUMNS})
    for m in MEAN_COLUMNS:
        out[m] = out[m] / out["n"]
    return _shares(out.reset_index())[columns]


def _top_choice(ll: Array, gold: NDArray[np.int64]) -> tuple[Array, Array, Array]:
    """Per item: top-choice confidence, whether the top choice is gold, and the multi-class Brier score."""
    p = _softmax(ll)
    onehot = np.zeros_like(p)
    onehot[np.arange(len(gold)), gold] = 1.0
    return p.max(axis=1), (ll.argmax(axis=1) == gold).astype(float), ((p - onehot) ** 2).sum(axis=1)


class _TaskDraws:
    """The resample counts (float32) of the task last asked for and their row sums, shared by its variants (visited
    together); a large task's are made a block of resamples at a time (captrack.analysis.bootstrap.resample_matrix)."""

    def __init__(self, n_resamples: int, seed: int) -> None:
        self.n_resamples, self.seed = n_resamples, seed
        self.key: tuple[str, int] | None = None
        self.counts: ResampleMatrix = np.empty((0, 0), dtype=np.float32)
        self.drawn: NDArray[np.float32] = np.empty(0, dtype=np.float32)

    def get(self, task: str, n: int) -> tuple[ResampleMatrix, NDArray[np.float32]]:
        if self.key != (task, n):
            self.key, self.counts = None, np.empty((0, 0), dtype=np.float32)  # the last task's let go first
            self.counts = resample_matrix(task, n, self.n_resamples, self.seed, self.n_resamples, np.float32,
                                          lambda counts, rows: counts[rows].astype(np.float32, copy=False))
            self.drawn = self.counts.row_sums() if isinstance(self.counts, RowBlocks) else self.counts.sum(axis=1)
            self.key = (task, n)
        return self.counts, self.drawn


CalibrationGroup = tuple[tuple[Any, ...], dict[str, CalibrationSide]]
"""A (variant, algorithm, task)'s keys and, per side, what calibration drift reads of its items."""


def calibration_inputs(frame: pd.DataFrame | ChoiceFrame, n_bins: int = 10) -> list[CalibrationGroup]:
    """What calibration drift reads of each (variant, algorithm, task) group of `frame` (the input of `diagnose`),
    sorted by those keys: 9 bytes per item and side (captrack.analysis.calibration_sides), kept per variant by a
    comparison, which runs the bootstrap task by task at the end (`calibration_table`: each task's resamples drawn
    once). InputError as `diagnose`; ValueError: n_bins below 1."""
    data = _validated(frame)
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    keys = data.keys if isinstance(data, ChoiceFrame) else data
    out: list[CalibrationGroup] = []
    for key, rows in sorted(keys.groupby(KEYS, sort=True, dropna=False).indices.items()):
        parts: dict[str, list[tuple[Array, Array, Array]]] = {"base": [], "variant": []}
        blocks = choice_blocks(data, rows) if isinstance(data, ChoiceFrame) else choice_blocks(data.iloc[rows])
        for _, base, variant, gold in blocks:
            parts["base"].append(_top_choice(base, gold))
            parts["variant"].append(_top_choice(variant, gold))
        sides = {side: CalibrationSide.of(np.concatenate([c[0] for c in chunks]), np.concatenate([c[1] for c in chunks]),
                                          np.concatenate([c[2] for c in chunks]), n_bins) for side, chunks in parts.items()}
        out.append((tuple(key), sides))
    return out


def _calibration_group(sides: dict[str, CalibrationSide], task: str, n_bins: int,
                       draws: _TaskDraws | None) -> dict[str, float]:
    """ECE and Brier of base and variant for one (variant, task) group, with paired bootstrap CIs."""
    n = len(sides["base"].bins)
    if any(side.n_bins != n_bins for side in sides.values()):
        raise ValueError(f"calibration inputs made for {sides['base'].n_bins} bins, asked for {n_bins}")
    counts, drawn = draws.get(task, n) if draws is not None else (None, None)
    stats: dict[str, float] = {"n": n}
    boot: dict[str, tuple[Array, NDArray[Any]]] = {}
    for name, side in sides.items():
        stats[f"ece_{name}"], stats[f"brier_{name}"] = side.ece, side.brier
        if counts is not None and drawn is not None:
            boot[name] = side.resampled(counts, drawn)
    for i, name in enumerate(("ece", "brier")):
        stats[f"{name}_change"] = stats[f"{name}_variant"] - stats[f"{name}_base"]
        diff = (boot["variant"][i] - boot["base"][i]).astype(float) if boot else np.empty(0)
        stats[f"{name}_change_ci_low"], stats[f"{name}_change_ci_high"] = percentile_ci(diff)
    return stats


def calibration_table(groups: Sequence[CalibrationGroup], n_bins: int = 10, n_resamples: int = 1000,
                      seed: int = 0) -> pd.DataFrame:
    """Calibration drift of `groups` (`calibration_inputs`, of one or many variants): one row per group, sorted by
    (variant, algorithm, task); the bootstrap runs task by task, every variant of a task on the same resamples."""
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    ordered = sorted(groups, key=lambda group: group[0])
    task_at = KEYS.index("task")
    draws = _TaskDraws(n_resamples, seed) if n_resamples > 0 else None  # the variants of a task share its resamples
    stats = {i: _calibration_group(ordered[i][1], str(ordered[i][0][task_at]), n_bins, draws)
             for i in sorted(range(len(ordered)), key=lambda i: str(ordered[i][0][task_at]))}
    rows = [{**dict(zip(KEYS, key, strict=True)), **stats[i], "n_bins": n_bins} for i, (key, _) in enumerate(ordered)]
    table = pd.DataFrame(rows, columns=CALIBRATION_COLUMNS)
    return table.astype({"n": int, "n_bins": int})


def calibration(frame: pd.DataFrame | ChoiceFrame, n_bins: int = 10, n_resamples: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Calibration drift per (variant, algorithm, task): ECE and Brier of base and variant, and the change.

    The change (variant − base) gets a 95% paired bootstrap CI: items are resampled jointly for base
    and variant, with the same resamples for every variant of a task (see `calibration_table`).

    Args:
        frame: the input of `diagnose`.
        n_bins: equal-width confidence bins for the ECE.
        n_resamples: bootstrap resamples (0: no CIs, reported as NaN).
        seed: bootstrap seed.

    Raises:
        InputError: as `diagnose`.
        ValueError: n_bins below 1.
    """
    if n_bins < 1:
        raise ValueError(f"n_bins must be positive, got {n_bins}")
    return calibration_table(calibration_inputs(frame, n_bins), n_bins, n_resamples, seed)
