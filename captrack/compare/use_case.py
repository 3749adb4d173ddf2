"""The comparison use case: read once from the results layer, analyse, hand finished numbers to report.

`captrack compare`, `captrack run` and leaderboards all call :func:`compare`; nothing after it holds
the store or reads a samples file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from captrack.analysis.compare import CompareOptions, Comparison, analyse
from captrack.analysis.transitions import flipped_items
from captrack.analysis.types import ItemTexts, PairInput, RunTask, VariantSpec
from captrack.compare.inputs import load_input
from captrack.compare.texts import TextReader
from captrack.errors import UnknownNameError
from captrack.metrics.registry import get_metric
from captrack.results.store import SamplesFile, Store
from captrack.taxonomy import Taxonomy, load_taxonomy

__all__ = ["compare"]


def compare(store: Store, base: str, variants: Sequence[VariantSpec], options: CompareOptions | None = None,
            taxonomy: Taxonomy | None = None, progress: Callable[[str, int], None] | None = None) -> Comparison:
    """Compare each variant against `base`, both read from `store`.

    ``progress(variant, paired rows)`` is called after each variant is read and paired. With
    ``options.drill_limit``, the texts of up to that many flipped items per (variant, task, metric) are
    read too (``Comparison.item_texts``, for drill-down pages).

    Raises:
        MismatchError: items do not pair (see captrack.results.pairing) and not allow_partial.
        UnknownNameError: a model name not in the store.
    """
    taxonomy, options = taxonomy or load_taxonomy(), options or CompareOptions()

    def loaded(pair: PairInput) -> None:
        if progress is not None:
            progress(pair.spec.name, len(pair.paired.items))

    data = load_input(store, base, variants, options, taxonomy, loaded)
    comparison = analyse(data, options, taxonomy)
    if options.drill_limit:
        comparison.item_texts, comparison.texts_unavailable = _flipped_texts(store, comparison, options.drill_limit)
    return comparison


def _flipped_texts(store: Store, comparison: Comparison, limit: int) -> tuple[dict[RunTask, ItemTexts], list[str]]:
    """The texts of the flipped items drill-down pages show (the first `limit` per variant, task and metric)."""
    files: dict[RunTask, SamplesFile] = {}
    for model in dict.fromkeys([comparison.base, *comparison.paired]):
        files.update(store.samples_files(model))
    reader = TextReader(files)
    rows = comparison.transitions.drop_duplicates(["variant", "task", "metric"])
    for variant, task, metric in zip(rows["variant"], rows["task"], rows["metric"], strict=True):
        paired = comparison.paired[str(variant)]
        items, _ = flipped_items(paired.items, str(task), str(metric), _lower(str(metric)), limit)
        if items.empty:
            continue
        ids = [int(i) for i in items["doc_id"]]
        reader.want(str(items["base_run"].iloc[0]), str(task), ids)
        reader.want(str(items["variant_run"].iloc[0]), str(task), ids)
    return reader.read()


def _lower(metric: str) -> bool:
    try:
        return get_metric(metric).direction == "lower"
    except UnknownNameError:
        return False
