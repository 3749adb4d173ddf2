"""One comparison's variants read from the results layer, each paired with the base: what one process
(or one worker of captrack.compare.readers) reads for its variants."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence

import pandas as pd

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.types import PairInput
from captrack.compare.option_reads import paired_choices
from captrack.compare.texts import BaseTexts, read_pair_texts
from captrack.labels import VariantLabels
from captrack.results.pairing import PairedItems, Pairing, base_task_rows
from captrack.results.pairing_batch import PairingBatch, batch_sizes
from captrack.results.samples import paired_doc_field
from captrack.results.settings import setting_warnings
from captrack.results.store import Store
from captrack.results.trajectory import check_base, pair_variant, stepped_variants
from captrack.taxonomy import Taxonomy

__all__ = ["CHUNK_ROWS", "RELEASE_ROWS", "read_pairs"]

CHUNK_ROWS = 1 << 17
"""Base rows from which a variant is paired and read a run of whole tasks at a time, each run about this many rows
(captrack.results.pairing.Pairing.chunks): at ten million records a variant's 2.5 million paired rows, option
loglikelihoods and texts held at once took 4.7 GB; a chunk of 131,072 rows holds about a tenth of a GB."""

RELEASE_ROWS = 100_000
"""Paired rows from which DuckDB's memory is handed back after a variant's reads (Store.release_memory): at 2.5
million rows it kept 0.9 GB after pairing and 1 GB after the option loglikelihoods; for small variants, reopening
the store after each costs more than it saves (200 variants of 1,200 rows: 27 -> 30 s)."""


def _source_ids(store: Store, paired: PairedItems, taxonomy: Taxonomy) -> pd.Series | None:
    """Doc field ``id`` of the items of tasks whose items are forms of shared source items (taxonomy key
    shared_items), None elsewhere; None when no such task was compared (nothing is read then)."""
    tasks = paired.items["task"].astype(str)
    shared = tasks.isin([task for task in tasks.unique() if taxonomy.shares_items(task)]).to_numpy(dtype=bool)
    if not shared.any():
        return None
    values = paired_doc_field(store, dataclasses.replace(paired, items=paired.items[shared]), "id")
    return values.reindex(paired.items.index)


def read_pairs(store: Store, base: str, variants: Sequence[VariantLabels], options: CompareOptions, taxonomy: Taxonomy,
               base_texts: BaseTexts) -> Iterator[PairInput]:
    """Each variant read and paired with the base, in order (the base's texts kept in `base_texts` for the next);
    a variant of more than CHUNK_ROWS base rows as several chunks of whole tasks (PairInput.chunked), small ones
    paired many at a time (captrack.results.pairing_batch)."""
    fields = list(dict.fromkeys([*options.by, *([options.cluster] if options.cluster else [])]))
    base_rows: dict[str, int] | None = None  # read once, for every variant read in chunks
    stepped = stepped_variants(store, [v.name for v in variants]) if not fields else set()
    batches = _Batches(store, base, [v.name for v in variants if v.name not in stepped] if not fields else [], taxonomy,
                       options.allow_partial)
    try:
        for variant in variants:
            check_base(store, base)
            if fields or variant.name in stepped:  # doc fields group a variant's items; a trajectory's steps
                paired, steps = pair_variant(store, base, variant.name, taxonomy, options.allow_partial)
                if len(paired.items) >= RELEASE_ROWS:  # what DuckDB kept from pairing (its join) is not needed again
                    store.release_memory()
                differences = setting_warnings(store, base, variant.name)
                pair = PairInput(spec=variant, paired=paired, setting_differences=differences,
                                 warnings=[*paired.warnings, *differences], steps=steps)
                yield _read(store, pair, options, taxonomy, base_texts, fields)
                del pair, paired, steps  # this variant's items are not held while the next one is read
            else:
                base_rows = base_rows if base_rows is not None else base_task_rows(store, base)
                yield from _read_chunks(store, base, variant, options, taxonomy, base_texts, base_rows,
                                        batches.pairing(variant.name, base_rows))
    finally:
        batches.close()


class _Batches:
    """The variants read in chunks, paired a batch at a time where the base is small (PairingBatch), in order: each
    batch made when its first variant is reached, dropped when the next is made or reading ends."""

    def __init__(self, store: Store, base: str, names: list[str], taxonomy: Taxonomy, allow_partial: bool) -> None:
        self.store, self.base, self.names, self.taxonomy, self.allow_partial = store, base, names, taxonomy, allow_partial
        self.open: PairingBatch | None = None
        self.members: set[str] = set()

    def pairing(self, name: str, base_rows: dict[str, int]) -> Pairing | None:
        """`name`'s pairing from its batch (None: paired alone, its base too large to batch)."""
        size = batch_sizes(sum(base_rows.values()), len(self.names))
        if size < 2 or name not in self.names:
            return None
        if name not in self.members:
            self.close()
            start = self.names.index(name)
            members = self.names[start:start + size]
            self.open, self.members = PairingBatch(self.store, self.base, members, self.taxonomy, self.allow_partial), set(members)
        assert self.open is not None
        return self.open.pairing(name)

    def close(self) -> None:
        if self.open is not None:
            self.open.close()
            self.open, self.members = None, set()


def _read_chunks(store: Store, base: str, variant: VariantLabels, options: CompareOptions, taxonomy: Taxonomy,
                 base_texts: BaseTexts, base_rows: dict[str, int], pairing: Pairing | None = None) -> Iterator[PairInput]:
    """One variant paired (by `pairing`, else here) and read a run of whole tasks at a time (one chunk when it is
    small): each chunk is read once the next is paired, so the last is known to be the last and carries the
    variant's pairing warnings."""
    pairing = pairing if pairing is not None else Pairing(store, base, variant.name, taxonomy, options.allow_partial)
    held: PairedItems | None = None
    for paired in pairing.chunks(CHUNK_ROWS, base_rows):
        if len(paired.items) >= RELEASE_ROWS:  # what DuckDB kept from pairing (its join) is not needed again
            store.release_memory()
        if held is not None:
            yield _read(store, PairInput(spec=variant, paired=held, chunked=True, last=False), options, taxonomy,
                        base_texts, [])
        held = paired
    whole = pairing.finish()  # MismatchError: items that do not pair (all tasks' problems named)
    assert held is not None  # finish raised where no task had a scored item
    differences = setting_warnings(store, base, variant.name)
    header = [*whole.warnings, *differences]
    paired = dataclasses.replace(held, warnings=whole.warnings, nan_excluded=whole.nan_excluded)
    chunked = pairing.rows > len(held.items)  # earlier chunks were yielded
    pair = PairInput(spec=variant, paired=paired, setting_differences=differences, warnings=[] if chunked else header,
                     chunked=chunked, variant_warnings=header if chunked else [])
    yield _read(store, pair, options, taxonomy, base_texts, [])


def _read(store: Store, pair: PairInput, options: CompareOptions, taxonomy: Taxonomy, base_texts: BaseTexts,
          fields: list[str]) -> PairInput:
    """What the analyses of `pair` (a variant or one chunk of it) read from the store and the samples files."""
    paired, variant = pair.paired, pair.spec
    pair.fields = {name: paired_doc_field(store, paired, name) for name in fields}
    pair.source_ids = _source_ids(store, paired, taxonomy)
    texts = read_pair_texts(paired.items, base_texts.base_files, store.samples_files(variant.name), options.churn,
                            options.drill_limit, base_texts)
    pair.churn_answers = texts.churn_answers if options.churn else None
    pair.item_texts, pair.texts_unavailable = texts.item_texts, texts.unavailable
    if options.distribution:
        pair.choices = paired_choices(store, paired, variant.algorithm, pair.warnings)
        if len(paired.items) >= RELEASE_ROWS:
            store.release_memory()
    return pair
