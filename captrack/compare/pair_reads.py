"""One comparison's variants read from the results layer, each paired with the base: what one process
(or one worker of captrack.compare.readers) reads for its variants."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from captrack.analysis.compare import CompareOptions
from captrack.analysis.types import PairInput, VariantSpec
from captrack.compare.choices import paired_choices
from captrack.compare.texts import BaseTexts, read_pair_texts
from captrack.results.samples import paired_doc_field
from captrack.results.settings import setting_warnings
from captrack.results.store import Store
from captrack.results.trajectory import pair_variant
from captrack.taxonomy import Taxonomy

__all__ = ["read_pairs"]


def read_pairs(store: Store, base: str, variants: Sequence[VariantSpec], options: CompareOptions, taxonomy: Taxonomy,
               base_texts: BaseTexts) -> Iterator[PairInput]:
    """Each variant read and paired with the base, in order (the base's texts kept in `base_texts` for the next)."""
    base_files = base_texts.base_files
    fields = list(dict.fromkeys([*options.by, *([options.cluster] if options.cluster else [])]))
    for variant in variants:
        paired, steps = pair_variant(store, base, variant.name, taxonomy, options.allow_partial)
        differences = setting_warnings(store, base, variant.name)
        pair = PairInput(spec=variant, paired=paired, setting_differences=differences,
                         warnings=[*paired.warnings, *differences], steps=steps)
        pair.fields = {name: paired_doc_field(store, paired, name) for name in fields}
        variant_files = store.samples_files(variant.name)
        texts = read_pair_texts(paired.items, base_files, variant_files, options.churn, options.drill_limit,
                                base_texts)
        pair.churn_answers = texts.churn_answers if options.churn else None
        pair.item_texts, pair.texts_unavailable = texts.item_texts, texts.unavailable
        if options.distribution:
            pair.choices = paired_choices(store, paired, variant.algorithm, pair.warnings)
        yield pair
