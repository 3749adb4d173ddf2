"""Item texts a comparison needs from the samples files, each file read once.

Answer churn needs both sides' texts of the items whose score did not change (generated-answer tasks
only); the leaderboard's drill-down pages need the texts of the flipped items they show.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import pandas as pd

from captrack.analysis.types import ItemTexts, RunTask
from captrack.results.samples import read_item_texts, unavailable_reason
from captrack.results.store import SamplesFile

__all__ = ["TextReader", "churn_texts"]

Files = Mapping[RunTask, SamplesFile]


def churn_texts(paired_items: pd.DataFrame, base_files: Files, variant_files: Files
                ) -> dict[tuple[str, str, str], tuple[ItemTexts, ItemTexts, str] | None]:
    """Per (task, base run, variant run) of a generated-answer task: both sides' texts of the items whose
    score did not change, and the output type; None where either samples file is missing or changed."""
    out: dict[tuple[str, str, str], tuple[ItemTexts, ItemTexts, str] | None] = {}
    same = paired_items[paired_items["base"] == paired_items["variant"]]
    for (task, base_run, variant_run), frame in paired_items.groupby(["task", "base_run", "variant_run"], sort=True):
        sides = (base_files.get((str(base_run), str(task))), variant_files.get((str(variant_run), str(task))))
        if sides[0] is not None and sides[0].output_type == "multiple_choice":
            continue  # option-likelihood tasks: the per-choice diagnostics give their answers
        key = (str(task), str(base_run), str(variant_run))
        if sides[0] is None or sides[1] is None or any(unavailable_reason(f) is not None for f in (sides[0], sides[1])):
            out[key] = None
            continue
        ids = sorted({int(i) for i in same.loc[same.index.intersection(frame.index), "doc_id"]})
        out[key] = (read_item_texts(sides[0], ids), read_item_texts(sides[1], ids), sides[0].output_type)
    return out


class TextReader:
    """Collects the doc ids wanted from each (run, task) samples file, then reads every file once."""

    def __init__(self, files: Files) -> None:
        self._files = files
        self._wanted: dict[RunTask, set[int]] = {}

    def want(self, run_id: str, task: str, doc_ids: Iterable[int]) -> None:
        self._wanted.setdefault((run_id, task), set()).update(int(i) for i in doc_ids)

    def read(self) -> tuple[dict[RunTask, ItemTexts], list[str]]:
        """(run, task) -> doc_id -> texts, and why the files that could not be read were not (sorted, once each)."""
        texts: dict[RunTask, ItemTexts] = {}
        unavailable: set[str] = set()
        for (run_id, task), ids in sorted(self._wanted.items()):
            file = self._files.get((run_id, task))
            if file is None:
                unavailable.add(f"run {run_id} has no samples file for {task} in the store")
                continue
            reason = unavailable_reason(file)
            if reason is not None:
                unavailable.add(reason)
            texts[(run_id, task)] = read_item_texts(file, sorted(ids))
        return texts, sorted(unavailable)
