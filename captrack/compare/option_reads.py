"""Per-choice loglikelihoods of paired multiple-choice items, for the distribution diagnostics.

Items come from the one pairing (captrack.results.pairing); the option-index gold and per-option
loglikelihoods are read from the store as arrays (captrack.results.option_loglikelihoods; typed at ingest), once,
when the comparison's input is loaded. The lowest replicate both models have is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from captrack.analysis.choice_frame import ChoiceFrame
from captrack.results.option_loglikelihoods import paired_task_choices
from captrack.results.pairing import PairedItems
from captrack.results.store import Store

__all__ = ["paired_choices"]

_KEYS = ["variant", "algorithm", "task", "doc_hash", "gold"]


def paired_choices(store: Store, paired: PairedItems, algorithm: str, warnings: list[str]) -> ChoiceFrame:
    """The items of every multiple-choice task of `paired` (tasks by name, items in base doc order).

    Items whose gold is not an option index are skipped (counted in `warnings`), as are tasks whose
    samples files are gone or changed since ingest (stores ingested before loglikelihoods were stored).
    """
    parts = []
    for found in paired_task_choices(store, paired, warnings):
        if found.skipped:
            warnings.append(f"{paired.variant}: {found.task}: {found.skipped} items without an option-index gold "
                            "skipped in distribution diagnostics")
        n = found.gold.size
        text = {"variant": paired.variant, "algorithm": algorithm, "task": found.task}  # numpy objects: fast to take
        keys = pd.DataFrame({**{c: pd.Series(np.full(n, v, dtype=object), dtype=object) for c, v in text.items()},
                             "doc_hash": pd.Series(found.doc_hash, dtype=object), "gold": found.gold}, columns=_KEYS)
        parts.append(ChoiceFrame(keys, found.k, found.base_ll, found.variant_ll))
    return ChoiceFrame.concat(parts) if parts else ChoiceFrame(
        pd.DataFrame(columns=_KEYS), np.empty(0, dtype=np.int64), np.empty((0, 0)), np.empty((0, 0)))
