"""Types shared by the analysis modules, kept below them so that none imports another for a type.

:class:`CompareInput` is everything a comparison reads from the results layer, read once by
captrack.compare before any statistic is computed: analysis receives data, never the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from captrack.analysis.choice_frame import ChoiceFrame
    from captrack.labels import VariantLabels
    from captrack.results.pairing import PairedItems
    from captrack.results.samples import ItemText

__all__ = ["ChurnAnswers", "CompareInput", "ItemTexts", "PairInput", "RunTask", "VariantPart"]

RunTask = tuple[str, str]
"""(run id, task): one samples file of one run."""

ItemTexts = dict[int, "ItemText"]
"""doc_id -> the item's prompt, gold, response and doc, as one samples file logged it."""


ChurnAnswers = dict[tuple[str, str, str], "dict[str, list[tuple[str, str]] | None] | None"]
"""(task, base run, variant run) -> metric -> (base, variant) scored answers of the items whose score did not
change (None: the metric reads the whole response); None where the samples files cannot be read."""


@dataclass
class VariantPart:
    """What a comparison computes from one variant's pair alone (captrack.analysis.variant_part)."""

    per_replicate: pd.DataFrame
    items: dict[tuple[str, str, str], Any]  # (variant, task, metric) -> (base, variant) values per paired item
    clusters: dict[Any, Any]
    transitions: list[dict[str, Any]]
    drift: list[dict[str, Any]]
    counts: dict[str, Any]
    warnings: list[str]
    pair_deltas: pd.DataFrame | None = None
    sources: dict[Any, Any] = field(default_factory=dict)  # (variant, task, metric) -> each item's source id
    row_warnings: list[str] = field(default_factory=list)  # the warnings before the zero-base one (per task, metric)
    churn_unreadable: list[str] = field(default_factory=list)  # tasks whose answer churn could not be read


@dataclass
class PairInput:
    """One variant paired with the base, and what its analyses read from the samples files.

    ``choices``: the multiple-choice items with both sides' per-option loglikelihoods (None when the
    distribution diagnostics are off).
    ``churn_answers``: the scored answers answer churn compares (generated-answer tasks; None when
    churn is off).
    ``item_texts``: (run, task) -> doc_id -> texts of the flipped items drill-down pages show (with
    ``options.drill_limit``); ``texts_unavailable``: why some could not be read.
    ``fields``: doc field -> its value per row of ``paired.items`` (same index), for --by and --cluster.
    ``source_ids``: doc field ``id`` per row of ``paired.items`` for the tasks the taxonomy says share source
    items (None elsewhere), for the covariance of capability members that are forms of the same items.
    ``steps``: for a variant evaluated at several training steps, each step's items paired with the
    base (``paired`` is then the last step, the end point); empty otherwise.
    ``warnings``: what reading found (pairing, unreadable files, skipped items), in reading order.

    A large variant is read a few tasks at a time (captrack.compare.pair_reads): each chunk is a PairInput with
    ``chunked`` set, ``paired`` holding its tasks' items and ``warnings`` what reading them found; the last
    (``last``) also carries the variant's own warnings (pairing, settings: ``variant_warnings``, which come first)
    and ``paired`` its pairing's warnings and NaN counts. The analysis joins the chunks (captrack.analysis.variant_chunks).
    """

    spec: VariantLabels
    paired: PairedItems
    setting_differences: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    choices: ChoiceFrame | None = None
    churn_answers: ChurnAnswers | None = None
    item_texts: dict[RunTask, ItemTexts] = field(default_factory=dict)
    texts_unavailable: list[str] = field(default_factory=list)
    fields: dict[str, pd.Series] = field(default_factory=dict)
    source_ids: pd.Series | None = None
    steps: dict[int, PairedItems] = field(default_factory=dict)  # a trajectory: training step -> items paired with the base
    part: VariantPart | None = None  # computed where the pair was read (a worker), else by analyse
    chunked: bool = False  # one of the chunks a large variant is read in
    last: bool = True  # no more chunks of this variant follow
    variant_warnings: list[str] = field(default_factory=list)  # a chunked variant's own warnings (on its last chunk)


@dataclass
class CompareInput:
    """Everything one comparison of variants against a base reads, before any statistic is computed.

    ``judged``: model -> task -> metric -> judge summary; ``output_types``: task -> lm-eval output type
    (the base's samples files).
    """

    base: str
    pairs: Iterable[PairInput]  # read as the analysis takes them (captrack.compare.inputs): one pass
    judged: dict[str, Any] = field(default_factory=dict)
    output_types: dict[str, str] = field(default_factory=dict)
