"""Read what one comparison needs from the results layer, once: paired items, settings, judged summaries,
and from the samples files the per-choice loglikelihoods, answer texts and doc fields its options ask for."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from captrack.analysis.compare import CompareOptions
from captrack.analysis.types import CompareInput, PairInput, VariantSpec
from captrack.compare.choices import paired_choices
from captrack.compare.texts import BaseTexts, read_pair_texts
from captrack.results.samples import paired_doc_field
from captrack.results.settings import setting_warnings
from captrack.results.store import Store
from captrack.results.trajectory import pair_variant
from captrack.taxonomy import Taxonomy

__all__ = ["load_input"]


def load_input(store: Store, base: str, variants: Sequence[VariantSpec], options: CompareOptions, taxonomy: Taxonomy,
               loaded: Callable[[PairInput], None] | None = None) -> CompareInput:
    """Everything comparing `variants` with `base` reads from `store`; ``loaded(pair)`` after each variant.

    Raises:
        MismatchError: items do not pair (see captrack.results.pairing) and not allow_partial.
        UnknownNameError: a model name not in the store.
        InputError: a samples file a --by or --cluster field is read from is missing or changed; the base
            carries training steps.
    """
    base_files = store.samples_files(base)
    fields = list(dict.fromkeys([*options.by, *([options.cluster] if options.cluster else [])]))
    pairs = []
    base_texts = BaseTexts(base_files)  # the base's texts and answers, read once for every variant
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
        pairs.append(pair)
        if loaded is not None:
            loaded(pair)
    output_types: dict[str, str] = {}
    for (_, task), file in base_files.items():
        output_types.setdefault(task, file.output_type)
    return CompareInput(base=base, pairs=pairs, judged=store.judged_summary([base, *(v.name for v in variants)]),
                        output_types=output_types)
