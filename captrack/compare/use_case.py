"""The comparison use case: read once from the results layer, analyse, hand finished numbers to report.

`captrack compare`, `captrack run` and leaderboards all call :func:`compare`; nothing after it holds
the store or reads a samples file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from captrack.analysis.comparison import CompareOptions, Comparison, analyse
from captrack.analysis.item_spool import DistributionItems
from captrack.analysis.types import PairInput
from captrack.compare.inputs import load_input
from captrack.files import remove_stale_scratch
from captrack.labels import VariantLabels
from captrack.report.items_ahead import ItemsAhead
from captrack.results.store import Store
from captrack.taxonomy import Taxonomy, load_taxonomy

__all__ = ["compare"]


def compare(store: Store, base: str, variants: Sequence[VariantLabels], options: CompareOptions | None = None,
            taxonomy: Taxonomy | None = None, progress: Callable[[str, int], None] | None = None,
            items_ahead: bool = False) -> Comparison:
    """Compare each variant against `base`, both read from `store`.

    ``progress(variant, paired rows)`` is called after each variant is read and paired. With
    ``options.drill_limit``, the texts of up to that many flipped items per (variant, task, metric) are
    read too (``Comparison.item_texts``, for drill-down pages). With `items_ahead` (a caller that writes the
    comparison: captrack.report.writer.write_comparison), a large distribution_items.csv's text is written by a
    second core while the analysis runs (captrack.report.items_ahead).

    Raises:
        MismatchError: items do not pair (see captrack.results.pairing) and not allow_partial.
        UnknownNameError: a model name not in the store.
    """
    taxonomy, options = taxonomy or load_taxonomy(), options or CompareOptions()
    remove_stale_scratch()  # what a comparison killed with kill -9 left in TMPDIR (its staging folder: the writer's)

    rows: dict[str, int] = {}

    def loaded(pair: PairInput) -> None:  # a large variant comes in chunks (PairInput.chunked): said once, at its last
        rows[pair.spec.name] = rows.get(pair.spec.name, 0) + len(pair.paired.items)
        if progress is not None and pair.last:
            progress(pair.spec.name, rows.pop(pair.spec.name))

    # the variants are read as the analysis takes them (one held at a time, a large one a few tasks at a time); DuckDB's
    # memory is handed back after each
    items = DistributionItems(follower=ItemsAhead() if items_ahead else None)
    return analyse(load_input(store, base, variants, options, taxonomy, loaded), options, taxonomy, distribution_items=items)
