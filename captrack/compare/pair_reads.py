"""One comparison's variants read from the results layer, each paired with the base: what one process
(or one worker of captrack.compare.readers) reads for its variants."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import pandas as pd

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.types import PairInput, VariantSpec
from captrack.compare.option_reads import paired_choices
from captrack.compare.texts import BaseTexts, read_pair_texts
from captrack.results.pairing import PairedItems
from captrack.results.samples import paired_doc_field
from captrack.results.settings import setting_warnings
from captrack.results.store import Store
from captrack.results.trajectory import pair_variant
from captrack.taxonomy import Taxonomy

__all__ = ["RELEASE_ROWS", "read_pairs"]

RELEASE_ROWS = 100_000
"""Paired rows from which DuckDB's memory is handed back after a variant's reads (Store.release_memory): at 2.5
million rows it kept 0.9 GB after pairing and 1 GB after the option loglikelihoods; for small variants, reopening
the store after each costs more than it saves (200 variants of 1,200 rows: 27 -> 30 s)."""


def _source_ids(store: Store, paired: PairedItems, taxonomy: Taxonomy) -> pd.Series | None:
    """Doc field ``id`` of the items of tasks whose items are forms of shared source items (taxonomy key
    shared_items), None elsewhere; None when no such task was compared (nothing is read then)."""
    shared = paired.items["task"].astype(str).map(taxonomy.shares_items).to_numpy(dtype=bool)
    if not shared.any():
        return None
    values = paired_doc_field(store, dataclasses.replace(paired, items=paired.items[shared]), "id")
    return values.reindex(paired.items.index)


def read_pairs(store: Store, base: str, variants: Sequence[VariantSpec], options: CompareOptions, taxonomy: Taxonomy,
               base_texts: BaseTexts) -> Iterator[PairInput]:
    """Each variant read and paired with the base, in order (the base's texts kept in `base_texts` for the next)."""
    base_files = base_texts.base_files
    fields = list(dict.fromkeys([*options.by, *([options.cluster] if options.cluster else [])]))
    for variant in variants:
        paired, steps = pair_variant(store, base, variant.name, taxonomy, options.allow_partial)
        large = len(paired.items) >= RELEASE_ROWS
        if large:  # what DuckDB kept from pairing (its join: about a third of the memory then) is not needed again
            store.release_memory()
        differences = setting_warnings(store, base, variant.name)
        pair = PairInput(spec=variant, paired=paired, setting_differences=differences,
                         warnings=[*paired.warnings, *differences], steps=steps)
        pair.fields = {name: paired_doc_field(store, paired, name) for name in fields}
        pair.source_ids = _source_ids(store, paired, taxonomy)
        variant_files = store.samples_files(variant.name)
        texts = read_pair_texts(paired.items, base_files, variant_files, options.churn, options.drill_limit,
                                base_texts)
        pair.churn_answers = texts.churn_answers if options.churn else None
        pair.item_texts, pair.texts_unavailable = texts.item_texts, texts.unavailable
        if options.distribution:
            pair.choices = paired_choices(store, paired, variant.algorithm, pair.warnings)
            if large:
                store.release_memory()
        yield pair
        del pair, paired, texts  # this variant's items are not held while the next one is read
