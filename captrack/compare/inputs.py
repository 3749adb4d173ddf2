"""Read what one comparison needs from the results layer, once: paired items, settings, judged summaries,
and from the samples files the per-choice loglikelihoods, answer texts and doc fields its options ask for.

Variants are read independently of each other: a read-only store file with many variants to read is
read by worker processes side by side (captrack.compare.readers; one per usable core, CAPTRACK_WORKERS
wins), and the pairs come back in the variants' order.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from captrack.analysis.comparison import CompareOptions
from captrack.analysis.types import CompareInput, PairInput
from captrack.compare.pair_reads import read_pairs
from captrack.compare.readers import read_in_workers
from captrack.compare.texts import BaseTexts
from captrack.labels import VariantLabels
from captrack.processes import usable_cores, worker_count
from captrack.results.store import Store
from captrack.taxonomy import Taxonomy

__all__ = ["PARALLEL_VARIANTS", "load_input", "reader_count"]

PARALLEL_VARIANTS = 16
"""Variants from which a comparison is read by worker processes: starting one costs a second or two, and each
holds its variants' pairs while the caller gathers them (a few large variants: one process uses less memory)."""


def load_input(store: Store, base: str, variants: Sequence[VariantLabels], options: CompareOptions, taxonomy: Taxonomy,
               loaded: Callable[[PairInput], None] | None = None) -> CompareInput:
    """Everything comparing `variants` with `base` reads from `store`; ``loaded(pair)`` after each variant.

    Raises:
        MismatchError: items do not pair (see captrack.results.pairing) and not allow_partial.
        UnknownNameError: a model name not in the store.
        InputError: a samples file a --by or --cluster field is read from is missing or changed; the base
            carries training steps.
    """
    base_files = store.samples_files(base)
    output_types: dict[str, str] = {}
    for (_, task), file in base_files.items():
        output_types.setdefault(task, file.output_type)
    judged = store.judged_summary([base, *(v.name for v in variants)])
    readers = reader_count(store, len(variants))
    found = read_in_workers(store.path, base, variants, options, taxonomy, readers) if readers > 1 else (
        read_pairs(store, base, variants, options, taxonomy, BaseTexts(base_files)))
    return CompareInput(base=base, pairs=_handed_on(found, loaded), judged=judged,
                        output_types=output_types)


def _handed_on(found: Iterator[PairInput], loaded: Callable[[PairInput], None] | None) -> Iterator[PairInput]:
    """The pairs one at a time, as the analysis takes them: it lets each go before the next is read (what DuckDB
    kept from reading each is handed back as it is read: captrack.compare.pair_reads)."""
    for pair in found:
        if loaded is not None:
            loaded(pair)
        yield pair
        del pair  # not held while the next is read


def reader_count(store: Store, n_variants: int) -> int:
    """Processes to read `n_variants` with: 1 for an in-memory or writable store and for fewer than
    PARALLEL_VARIANTS variants, else one per usable core (captrack.processes.worker_count: a whole
    number in CAPTRACK_WORKERS wins, also below PARALLEL_VARIANTS; never more than one per variant)."""
    if store.path == ":memory:" or not store.read_only or n_variants < 2:
        return 1
    explicit = os.environ.get("CAPTRACK_WORKERS", "").strip()
    if n_variants < PARALLEL_VARIANTS and not (explicit.isdigit() and int(explicit) > 0):
        return 1
    return worker_count(n_variants, usable_cores())
