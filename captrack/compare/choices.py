"""Per-choice loglikelihoods of paired multiple-choice items, for the distribution diagnostics.

Items come from the one pairing (captrack.results.pairing); the per-option loglikelihoods are read
through the store from the samples files it recorded (captrack.results.samples), once, when the
comparison's input is loaded. The lowest replicate both models have is used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pandas as pd

from captrack.analysis.distribution import loglikelihoods_from_resps
from captrack.results.pairing import PairedItems
from captrack.results.samples import read_paired_choices, unavailable_reason
from captrack.results.store import SamplesFile

__all__ = ["paired_choices"]

Files = Mapping[tuple[str, str], SamplesFile]
_COLUMNS = ["variant", "algorithm", "task", "doc_hash", "gold", "base_ll", "variant_ll"]


def paired_choices(base_files: Files, variant_files: Files, paired: PairedItems, algorithm: str,
                   warnings: list[str]) -> pd.DataFrame:
    """Rows of (variant, algorithm, task, doc_hash, gold, base_ll, variant_ll) for every multiple-choice task.

    Items whose gold is not an option index are skipped (counted in `warnings`), as are tasks whose
    samples files are gone or changed since ingest.
    """
    if paired.items.empty or not paired.replicates:
        return pd.DataFrame(columns=_COLUMNS)
    files = {"base": base_files, "variant": variant_files}
    first = paired.items[paired.items["replicate"] == min(paired.replicates)]
    frames = []
    for task, items in first.groupby("task", sort=True):
        items = items[items["metric"] == items["metric"].min()]
        ids = items.iloc[0]
        base_file = files["base"].get((ids["base_run"], str(task)))
        variant_file = files["variant"].get((ids["variant_run"], str(task)))
        if base_file is None or variant_file is None or base_file.output_type != "multiple_choice":
            continue
        problem = unavailable_reason(base_file) or unavailable_reason(variant_file)
        if problem:
            warnings.append(f"{paired.variant}: {problem}; no distribution diagnostics for {task}")
            continue
        joined = read_paired_choices(base_file, variant_file, items[["filter", "doc_hash", "occ"]])
        frames.append(_rows(paired.variant, algorithm, str(task), joined, warnings))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=_COLUMNS)


def _rows(variant: str, algorithm: str, task: str, joined: list[tuple[Any, ...]], warnings: list[str]) -> pd.DataFrame:
    out, skipped = [], 0
    for doc_hash, target, base_resps, variant_resps in joined:
        gold: Any = json.loads(target) if isinstance(target, str) else target
        base_ll = loglikelihoods_from_resps(json.loads(base_resps))
        variant_ll = loglikelihoods_from_resps(json.loads(variant_resps))
        if isinstance(gold, str) and gold.strip().isdigit():
            gold = int(gold)
        if not isinstance(gold, int) or not 0 <= gold < len(base_ll) or len(base_ll) != len(variant_ll):
            skipped += 1
            continue
        out.append({"variant": variant, "algorithm": algorithm, "task": task, "doc_hash": doc_hash,
                    "gold": gold, "base_ll": base_ll, "variant_ll": variant_ll})
    if skipped:
        warnings.append(f"{variant}: {task}: {skipped} items without an option-index gold skipped in distribution diagnostics")
    return pd.DataFrame(out, columns=_COLUMNS)
