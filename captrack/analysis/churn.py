"""Flip decomposition beyond 1→0 and 0→1: answer churn, and transitions every seed agrees on.

Answer churn counts the items whose scored answer changed while the score did not (a wrong answer
replaced by a different wrong one, a right one by another right spelling): the model moved, the metric
did not see it. The answer is the one the metric's own scorer read (captrack.metrics.scored), which
captrack.compare reads from the samples files for generated answers; for an option-likelihood task it is the option scored highest,
taken from the per-choice diagnostics compare already computes (vectorised; the first replicate, NaN
when those diagnostics are off). Metrics that read the whole response (instructions, style) have no
answer: their churn is NaN.

With several seeds (replicates), compare's n_10 / n_01 pool every seed's transitions (the per-seed
mean); post-forget's stricter rule counts an item as forgotten (gained) only where every seed
forgot (gained) it: n_10_all_seeds / n_01_all_seeds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.item_rows import key_codes, one_row_items

__all__ = ["CHURN_COLUMNS", "answer_churn", "answer_churn_counts", "choice_churn", "churn_warning", "seed_agreements"]

CHURN_COLUMNS = ["answer_churn", "n_replicates", "n_10_all_seeds", "n_01_all_seeds"]

if TYPE_CHECKING:
    from captrack.analysis.types import ChurnAnswers
    from captrack.results.pairing import PairedItems


def seed_agreements(paired: PairedItems, lower: dict[tuple[str, str], bool]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(task, metric) -> (replicates, items forgotten by every seed, items gained by every seed), for every
    (task, metric) in `lower` (True: lower is better), all items grouped by one groupby."""
    items = paired.items
    if items.empty:
        return {}
    codes, keys = key_codes(items)
    direction = np.array([lower.get(key, np.nan) for key in keys], dtype=float)[codes]
    rows = ~np.isnan(direction)
    if not rows.any():
        return {}
    base, variant = items["base"].to_numpy(dtype=float), items["variant"].to_numpy(dtype=float)
    lower_rows = direction == 1.0
    good_base = np.where(lower_rows, base < 0.5, base > 0.5)
    good_variant = np.where(lower_rows, variant < 0.5, variant > 0.5)
    lost, won, replicate = good_base & ~good_variant, ~good_base & good_variant, items["replicate"].to_numpy()
    if one_row_items(items) is not None:  # each item one row: forgotten (gained) by every seed is by its row
        return _one_row_agreements(keys, codes[rows], replicate[rows], lost[rows], won[rows])
    item = pd.factorize(items["doc_hash"])[0].astype(np.int64) * (int(items["occ"].max()) + 1) + items["occ"].to_numpy(np.int64)
    frame = pd.DataFrame({"key": codes, "item": item, "replicate": replicate, "lost": lost, "won": won})[rows]
    per_item = frame.groupby(["key", "item"], sort=False)[["lost", "won"]].all().groupby(level="key", sort=False).sum()
    replicates = frame.groupby("key", sort=False)["replicate"].nunique()
    return {(str(keys[k][0]), str(keys[k][1])): (int(replicates[k]), int(per_item.at[k, "lost"]), int(per_item.at[k, "won"]))
            for k in replicates.index}


def _one_row_agreements(keys: list[tuple[str, str]], codes: NDArray[np.intp], replicate: NDArray[Any], lost: NDArray[np.bool_],
                        won: NDArray[np.bool_]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """seed_agreements where each item is one row (`codes`: each row's (task, metric) among `keys`), keys in the order
    they first appear, as its group-by gives them."""
    seen = pd.unique(codes).tolist()
    n_lost, n_won = np.bincount(codes, weights=lost), np.bincount(codes, weights=won)
    runs = pd.factorize(replicate, use_na_sentinel=False)[0].astype(np.int64)
    width = int(runs.max()) + 1 if runs.size else 1
    seeds = np.bincount(np.unique(codes.astype(np.int64) * width + runs) // width, minlength=len(keys))  # distinct seeds
    return {(str(keys[k][0]), str(keys[k][1])): (int(seeds[k]), int(n_lost[k]), int(n_won[k])) for k in seen}


def answer_churn(paired: PairedItems, answers: ChurnAnswers, warnings: list[str]) -> dict[tuple[str, str], float]:
    """(task, metric) -> items whose scored answer changed while their score did not (summed over seeds).

    ``answers`` holds, per (task, base run, variant run) of a generated-answer task and metric, the base's
    and the variant's scored answers of the unchanged items (captrack.compare reads them; None for a
    metric that reads the whole response: NaN), or None where the samples files cannot be read: NaN
    for its metrics (one warning). Option-likelihood tasks are absent: choice_churn counts them.
    """
    out, unreadable = answer_churn_counts(paired, answers)
    warnings += churn_warning(paired.variant, unreadable)
    return out


def answer_churn_counts(paired: PairedItems, answers: ChurnAnswers) -> tuple[dict[tuple[str, str], float], list[str]]:
    """`answer_churn`'s counts, and the tasks whose answers could not be read (sorted) instead of its warning."""
    out: dict[tuple[str, str], float] = {}
    unreadable: set[str] = set()
    items = paired.items
    metrics: dict[tuple[str, str, str], dict[str, None]] = {}  # each run pair's metrics, in the order its rows have them
    runs = items[["task", "base_run", "variant_run", "metric"]].drop_duplicates()  # first appearances, in row order
    for task, base_run, variant_run, metric in zip(*(runs[c].to_numpy(dtype=object).tolist() for c in runs.columns),
                                                   strict=True):
        metrics.setdefault((str(task), str(base_run), str(variant_run)), {})[metric] = None
    for key in sorted(metrics):
        task = key[0]
        if key not in answers:
            continue  # option-likelihood tasks: choice_churn, from the per-choice diagnostics
        found = answers[key]
        if found is None:
            unreadable.add(str(task))
        for metric in metrics[key]:
            pairs = None if found is None else found.get(str(metric), [])
            count = math.nan if pairs is None else float(sum(_normal(b) != _normal(v) for b, v in pairs))
            out_key = (str(task), str(metric))
            out[out_key] = math.nan if found is None else out.get(out_key, 0.0) + count
    return out, sorted(unreadable)


def churn_warning(variant: str, unreadable: list[str]) -> list[str]:
    """The one warning naming the tasks whose answer churn could not be read (none without such tasks)."""
    if not unreadable:
        return []
    return [f"{variant}: answer churn not computed for {', '.join(sorted(unreadable))} "
            "(samples files unavailable; re-ingest the runs)"]


def _normal(answer: str) -> str:
    return " ".join(answer.casefold().split())


def choice_churn(distribution_items: pd.DataFrame) -> dict[tuple[str, str], float]:
    """(variant, task) -> multiple-choice items whose top option changed while both sides stayed wrong (or right)."""
    if distribution_items.empty:
        return {}
    same = distribution_items["transition"].isin(["00", "11"])
    moved = same & (distribution_items["base_answer"] != distribution_items["variant_answer"])
    counts = moved.groupby([distribution_items["variant"], distribution_items["task"]]).sum()
    return {(str(v), str(t)): float(c) for (v, t), c in counts.items()}
