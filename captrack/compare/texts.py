"""What a comparison needs from the samples files' texts, each file read once per variant.

Answer churn needs the scored answers of the items whose score did not change (generated-answer tasks
only: extracted here, the texts themselves are not kept); the leaderboard's drill-down pages need the
texts of the flipped items they show.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from captrack.analysis.transitions import flipped_rows
from captrack.analysis.types import ChurnAnswers, ItemTexts, RunTask
from captrack.errors import UnknownNameError
from captrack.metrics.registry import get_metric, lower_is_better
from captrack.metrics.scored import WHOLE_RESPONSE
from captrack.official.scorers import scored_answer_text
from captrack.results.samples import read_many_item_texts, unavailable_reason
from captrack.results.store import SamplesFile

__all__ = ["BaseTexts", "PairTexts", "read_pair_texts"]

Files = Mapping[RunTask, SamplesFile]
ChurnKey = tuple[str, str, str]  # task, base run, variant run


class BaseTexts:
    """What every variant of one comparison reads from the base's samples files, kept once read: the items'
    texts and the base side's scored answers (the base's files are read once, not once per variant)."""

    def __init__(self, base_files: Files) -> None:
        self.base_files = base_files
        self.files = set(base_files.values())
        self.texts: dict[SamplesFile, ItemTexts] = {}
        self.answers: dict[tuple[str, str, str, int], str] = {}  # (run, task, metric, doc id) -> scored answer


class PairTexts:
    """The texts one variant's comparison reads: churn answers, drill-down texts, and what could not be read."""

    def __init__(self) -> None:
        self.churn_answers: ChurnAnswers = {}
        self.item_texts: dict[RunTask, ItemTexts] = {}
        self.unavailable: list[str] = []


def read_pair_texts(items: pd.DataFrame, base_files: Files, variant_files: Files, churn: bool, drill_limit: int,
                    base: BaseTexts | None = None) -> PairTexts:
    """Read, once per samples file (all of them in one query), the texts `churn` and the drill-down (`drill_limit`
    flipped items per (task, metric), 0: none) need from the paired `items`' files. What `base` holds (the
    base's texts and answers other variants read) is not read again."""
    out = PairTexts()
    base = base if base is not None else BaseTexts(base_files)
    wanted: dict[RunTask, set[int]] = {}
    churn_groups: dict[ChurnKey, tuple[list[str], list[int]]] = {}  # metric and doc id of each unchanged item
    kinds: dict[ChurnKey, str] = {}
    # the columns as Python strings once: a few thousand rows per variant, where each pandas call costs more than the loop
    task, metric = items["task"].to_numpy(dtype=object), items["metric"].to_numpy(dtype=object)
    base_run, variant_run = items["base_run"].to_numpy(dtype=object), items["variant_run"].to_numpy(dtype=object)
    doc_ids = items["doc_id"].to_numpy()
    base_values, variant_values = items["base"].to_numpy(dtype=float), items["variant"].to_numpy(dtype=float)
    if churn:
        unchanged_rows: dict[ChurnKey, list[int]] = {}  # positions of each key's unchanged items, in item order
        for row in np.flatnonzero(base_values == variant_values).tolist():
            unchanged_rows.setdefault((task[row], base_run[row], variant_run[row]), []).append(row)
        for key in sorted(set(zip(task.tolist(), base_run.tolist(), variant_run.tolist(), strict=True))):
            sides = (base_files.get((key[1], key[0])), variant_files.get((key[2], key[0])))
            if sides[0] is not None and sides[0].output_type == "multiple_choice":
                continue  # option-likelihood tasks: the per-choice diagnostics give their answers
            if sides[0] is None or sides[1] is None or any(unavailable_reason(f) is not None for f in (sides[0], sides[1])):
                out.churn_answers[key] = None
                continue
            rows = unchanged_rows.get(key, [])
            churn_groups[key] = ([str(metric[row]) for row in rows], [int(doc_ids[row]) for row in rows])
            kinds[key] = sides[0].output_type
            ids = set(churn_groups[key][1])
            wanted.setdefault((key[1], key[0]), set()).update(ids)
            wanted.setdefault((key[2], key[0]), set()).update(ids)
    drill: set[RunTask] = set()
    if drill_limit:
        binary = np.isin(base_values, (0.0, 1.0)) & np.isin(variant_values, (0.0, 1.0))
        not_binary = set(zip(task[~binary].tolist(), metric[~binary].tolist(), strict=True))
        tracked = {(t, m): _lower(m) for t, m in sorted(set(zip(task.tolist(), metric.tolist(), strict=True)))
                   if (t, m) not in not_binary and _tracks(m)}
        found = flipped_rows(items, tracked) if tracked else None
        order = found.order if found is not None else np.empty(0, dtype=np.intp)
        for (flipped_task, _), (first, end) in (found.spans.items() if found is not None else ()):
            shown = order[first:min(end, first + drill_limit)]  # the flipped items the drill-down shows
            ids = {int(i) for i in doc_ids[shown]}
            for run in (str(base_run[shown[0]]), str(variant_run[shown[0]])):
                wanted.setdefault((run, flipped_task), set()).update(ids)
                drill.add((run, flipped_task))
    texts = _read(wanted, {**base_files, **variant_files}, drill, out, base)
    for key, unchanged in churn_groups.items():
        out.churn_answers[key] = _answers(key, unchanged, texts.get((key[1], key[0]), {}),
                                          texts.get((key[2], key[0]), {}), kinds[key], base.answers)
    out.item_texts = {run_task: texts.get(run_task, {}) for run_task in sorted(drill)}
    return out


def _read(wanted: dict[RunTask, set[int]], files: Files, drill: set[RunTask], out: PairTexts,
          base: BaseTexts) -> dict[RunTask, ItemTexts]:
    """Each wanted file's texts (the base's kept in `base`); why a drill-down file cannot be read goes into ``out.unavailable``."""
    unavailable: set[str] = set()
    found: dict[RunTask, SamplesFile] = {}
    missing: dict[SamplesFile, set[int]] = {}
    for (run_id, task), ids in sorted(wanted.items()):
        file = files.get((run_id, task))
        if file is None:
            unavailable.add(f"run {run_id} has no samples file for {task} in the store")
            continue
        reason = unavailable_reason(file)
        if reason is not None and (run_id, task) in drill:
            unavailable.add(reason)
        found[(run_id, task)] = file
        kept = base.texts.get(file, {})
        missing.setdefault(file, set()).update(i for i in ids if i not in kept)
    read = read_many_item_texts(missing)
    for file in base.files & read.keys():
        base.texts.setdefault(file, {}).update(read[file])
    texts: dict[RunTask, ItemTexts] = {}
    for run_task, file in found.items():
        if file in base.files:
            kept = base.texts.get(file, {})
            texts[run_task] = {i: kept[i] for i in sorted(wanted[run_task]) if i in kept}
        else:
            texts[run_task] = read[file]
    out.unavailable = sorted(unavailable)
    return texts


def _answers(key: ChurnKey, unchanged: tuple[list[str], list[int]], base: ItemTexts, variant: ItemTexts, kind: str,
             base_answers: dict[tuple[str, str, str, int], str]) -> dict[str, list[tuple[str, str]] | None]:
    """metric -> (base, variant) scored answers of its unchanged items (`unchanged`: their metrics and doc ids, in
    item order); None where the metric reads the whole response.

    The base's answers are kept in `base_answers` for the next variant."""
    task, base_run = key[0], key[1]
    by_metric: dict[str, list[int]] = {}
    for metric, doc_id in zip(*unchanged, strict=True):
        by_metric.setdefault(metric, []).append(doc_id)
    out: dict[str, list[tuple[str, str]] | None] = {}
    for metric in sorted(by_metric):
        pairs: list[tuple[str, str]] = []
        for doc_id in by_metric[metric]:
            b, v = base.get(doc_id), variant.get(doc_id)
            if b is None or v is None:
                continue
            known = (base_run, task, metric, doc_id)
            before = base_answers.get(known)
            if before is None:
                before = base_answers[known] = scored_answer_text(task, metric, b.doc, b.response, kind)
            if before == WHOLE_RESPONSE:
                break
            pairs.append((before, scored_answer_text(task, metric, v.doc, v.response, kind)))
        else:
            out[metric] = pairs
            continue
        out[metric] = None
    return out


def _tracks(metric: str) -> bool:
    """Whether compare counts transitions for a metric with binary values (so the drill-down shows its flips):
    a declared metric that tracks them, or an undeclared one."""
    try:
        return get_metric(metric).tracks_transitions
    except UnknownNameError:
        return True


def _lower(metric: str) -> bool:
    return lower_is_better(metric)
