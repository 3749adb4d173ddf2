"""Flip decomposition beyond 1→0 and 0→1: answer churn, and transitions every seed agrees on.

Answer churn counts the items whose scored answer changed while the score did not (a wrong answer
replaced by a different wrong one, a right one by another right spelling): the model moved, the metric
did not see it. The answer is the one the metric's own scorer read (captrack.metrics.scored), read from
the samples files for generated answers; for an option-likelihood task it is the option scored highest,
taken from the per-choice diagnostics compare already computes (vectorised; the first replicate, NaN
when those diagnostics are off). Metrics that read the whole response (instructions, style) have no
answer: their churn is NaN.

With several seeds (replicates), compare's n_10 / n_01 pool every seed's transitions (the per-seed
mean); post-forget's stricter rule counts an item as forgotten (gained) only where every seed
forgot (gained) it: n_10_all_seeds / n_01_all_seeds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

__all__ = ["CHURN_COLUMNS", "answer_churn", "choice_churn", "seed_agreement", "seed_agreements"]

CHURN_COLUMNS = ["answer_churn", "n_replicates", "n_10_all_seeds", "n_01_all_seeds"]

if TYPE_CHECKING:
    from captrack.results.pairing import PairedItems
    from captrack.results.samples import ItemText
    from captrack.results.store import Store


def seed_agreement(paired: PairedItems, task: str, metric: str, lower: bool) -> tuple[int, int, int]:
    """(replicates, items forgotten by every seed, items gained by every seed) of one (task, metric)."""
    return seed_agreements(paired, {(task, metric): lower}).get((task, metric), (0, 0, 0))


def seed_agreements(paired: PairedItems, lower: dict[tuple[str, str], bool]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """`seed_agreement` of every (task, metric) in `lower` (True: lower is better), the items grouped once."""
    items = paired.items
    if items.empty:
        return {}
    item = pd.factorize(items["doc_hash"])[0].astype(np.int64) * (int(items["occ"].max()) + 1) + items["occ"].to_numpy(np.int64)
    base, variant = items["base"].to_numpy(dtype=float), items["variant"].to_numpy(dtype=float)
    replicate = items["replicate"].to_numpy()
    out: dict[tuple[str, str], tuple[int, int, int]] = {}
    for (task, metric), rows in items.groupby(["task", "metric"], sort=False).indices.items():
        key = (str(task), str(metric))
        if key not in lower:
            continue
        b, v = base[rows], variant[rows]
        good_base, good_variant = (b < 0.5, v < 0.5) if lower[key] else (b > 0.5, v > 0.5)
        frame = pd.DataFrame({"item": item[rows], "lost": good_base & ~good_variant, "won": ~good_base & good_variant})
        per_item = frame.groupby("item")[["lost", "won"]].all()
        out[key] = (len(np.unique(replicate[rows])), int(per_item["lost"].sum()), int(per_item["won"].sum()))
    return out


def answer_churn(store: Store, paired: PairedItems, warnings: list[str]) -> dict[tuple[str, str], float]:
    """(task, metric) -> items whose scored answer changed while their score did not (summed over seeds).

    NaN for metrics that read no answer, and for tasks whose samples files cannot be read (one warning).
    """
    from captrack.results.samples import read_item_texts, unavailable_reason

    files = (store.samples_files(paired.base), store.samples_files(paired.variant))
    out: dict[tuple[str, str], float] = {}
    unreadable: set[str] = set()
    same = paired.items[paired.items["base"] == paired.items["variant"]]
    for (task, base_run, variant_run), frame in paired.items.groupby(["task", "base_run", "variant_run"], sort=True):
        sides = (files[0].get((str(base_run), str(task))), files[1].get((str(variant_run), str(task))))
        if sides[0] is not None and sides[0].output_type == "multiple_choice":
            continue  # option-likelihood tasks: choice_churn, from the per-choice diagnostics
        if any(f is None or unavailable_reason(f) is not None for f in sides):
            unreadable.add(str(task))
            for metric in frame["metric"].unique():
                out[(str(task), str(metric))] = math.nan
            continue
        unchanged = same.loc[same.index.intersection(frame.index)]
        ids = sorted({int(i) for i in unchanged["doc_id"]})
        texts = [read_item_texts(f, ids) for f in sides]  # type: ignore[arg-type]
        kind = sides[0].output_type  # type: ignore[union-attr]
        for metric in frame["metric"].unique():
            key = (str(task), str(metric))
            out[key] = out.get(key, 0.0) + _count(str(task), str(metric), unchanged, texts, kind)
    if unreadable:
        warnings.append(f"{paired.variant}: answer churn not computed for {', '.join(sorted(unreadable))} "
                        "(samples files unavailable; re-ingest the runs)")
    return out


def _count(task: str, metric: str, unchanged: pd.DataFrame, texts: list[dict[int, ItemText]], kind: str) -> float:
    """Unchanged-score items of one (task, metric, replicate) whose scored answer changed; NaN for no answer."""
    from captrack.metrics.scored import WHOLE_RESPONSE, scored_text

    count = 0.0
    for doc_id in unchanged.loc[unchanged["metric"] == metric, "doc_id"]:
        b, v = texts[0].get(int(doc_id)), texts[1].get(int(doc_id))
        if b is None or v is None:
            continue
        before = scored_text(task, metric, b.doc, b.response, kind)
        if before == WHOLE_RESPONSE:
            return math.nan
        count += float(_normal(before) != _normal(scored_text(task, metric, v.doc, v.response, kind)))
    return count


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
