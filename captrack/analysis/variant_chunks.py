"""A large variant's chunks joined back into one pair for the comparison.

captrack.compare.pair_reads reads a large variant a few tasks at a time (runs of whole tasks, in task order),
so that what is held at once is set by the chunk, not by the variant's records. Each chunk's own analysis
(captrack.analysis.variant_part, the distribution diagnostics) runs as it comes; `VariantChunks` keeps the
parts until the last chunk and then gives what the whole variant would have given: its part
(variant_part.merge_parts) and its pair, whose warnings come in the order a whole read gives them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pandas as pd

from captrack.analysis.types import PairInput, VariantPart
from captrack.analysis.variant_part import merge_parts

__all__ = ["VariantChunks"]


@dataclass
class _Pending:
    parts: list[VariantPart] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what reading each chunk found, in order
    items: list[pd.DataFrame] = field(default_factory=list)  # kept only when the comparison keeps paired items
    rows: int = 0


@dataclass
class VariantChunks:
    """The chunks of the variant being read, until its last. ``keep_items``: the whole variant's paired items are
    wanted after its analysis (drill-down pages), so each chunk's are kept to be joined."""

    keep_items: bool = False
    _pending: _Pending | None = None

    def add(self, pair: PairInput, part: VariantPart) -> tuple[PairInput, VariantPart, int] | None:
        """The whole variant's pair, part and paired rows once `pair` completes it (at once for a pair read whole),
        else None."""
        if not pair.chunked:
            return pair, part, len(pair.paired.items)
        pending = self._pending = self._pending or _Pending()
        pending.parts.append(part)
        pending.warnings += pair.warnings
        pending.rows += len(pair.paired.items)
        if self.keep_items:
            pending.items.append(pair.paired.items)
        if not pair.last:
            return None
        self._pending = None
        items = pd.concat(pending.items, ignore_index=True) if self.keep_items else pair.paired.items.iloc[:0]
        whole = dataclasses.replace(
            pair, paired=dataclasses.replace(pair.paired, items=items), warnings=[*pair.variant_warnings, *pending.warnings],
            choices=None, churn_answers=None, item_texts={}, texts_unavailable=[], part=None, chunked=False)
        return whole, merge_parts(pair.spec, pending.parts), pending.rows
