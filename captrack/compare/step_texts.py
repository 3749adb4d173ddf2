"""What the steps page shows of each item that flipped at a training step, read from the samples files.

A flip at step s is against the step evaluated before it (or the base): its texts are the item's logged
prompt and the responses of the run before and the run at step s (the first replicate). A samples file
that is gone or changed since ingest gives no texts for its side (the page says so); nothing is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from captrack.analysis.comparison import Comparison
from captrack.report.step_texts import FlipKey, StepTexts
from captrack.results.samples import read_many_item_texts
from captrack.results.steps import step_runs
from captrack.results.store import SamplesFile, Store

__all__ = ["board_step_texts", "read_step_flip_texts"]


def _flips(comparisons: list[Comparison]) -> pd.DataFrame:
    frames = [c.curves.step_flips for c in comparisons if c.curves is not None and not c.curves.step_flips.empty]
    return pd.concat(frames, ignore_index=True).drop_duplicates(["variant", "step", "task", "doc_id"]) if frames else pd.DataFrame()


def read_step_flip_texts(store: Store, comparisons: list[Comparison], bases: Mapping[str, str]) -> dict[FlipKey, StepTexts]:
    """Per flipped item of the comparisons' trajectories (their step_flips), its texts before and at its step.

    Args:
        store: the board's store, open.
        comparisons: the board's comparisons ({} without a trajectory).
        bases: variant -> the base it is compared with (the "before" of a flip since the base).
    """
    rows = _flips(comparisons)
    if rows.empty:
        return {}
    models = sorted({*map(str, rows["variant"]), *(bases[str(v)] for v in rows["variant"] if str(v) in bases)})
    runs = step_runs(store, models)
    files: dict[tuple[str, str], SamplesFile] = {}
    for model in models:
        files |= store.samples_files(model)
    plan: dict[FlipKey, tuple[str, SamplesFile | None, SamplesFile | None]] = {}
    wanted: dict[SamplesFile, set[int]] = {}
    for r in rows.itertuples():
        variant, step, task, doc, since = str(r.variant), int(r.step), str(r.task), int(r.doc_id), str(r.since)
        before = (bases.get(variant, ""), None, task) if since == "base" else (variant, int(since), task)
        sides = []
        for key in (before, (variant, step, task)):
            run = runs.get(key)
            file = files.get((run, task)) if run is not None else None
            if file is not None:
                wanted.setdefault(file, set()).add(doc)
            sides.append(file)
        label = f"base ({bases.get(variant, '?')})" if since == "base" else f"step {since}"
        plan[(variant, step, task, doc)] = (label, sides[0], sides[1])
    texts = read_many_item_texts(wanted)
    return {key: StepTexts(label, texts[first].get(key[3]) if first is not None else None,
                           texts[last].get(key[3]) if last is not None else None)
            for key, (label, first, last) in plan.items()}


def board_step_texts(store_path: Path | None, comparisons: list[Comparison], bases: Mapping[str, str]) -> dict[FlipKey, StepTexts]:
    """read_step_flip_texts with the board's store opened read-only, only when a trajectory flipped an item ({} else)."""
    if store_path is None or _flips(comparisons).empty:
        return {}
    with Store(store_path, read_only=True) as store:
        return read_step_flip_texts(store, comparisons, bases)
