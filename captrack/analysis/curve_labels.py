"""Each training step's item labels for curves.csv: the `--cluster` field and the source ids of tasks whose items
are forms of the same source items (taxonomy shared_items), so a step's verdicts carry the corrections
capabilities.csv's do and the last step equals the end-point comparison.

A label belongs to the item (task, doc_hash, occurrence), not to the step: the end point's per-row values are
mapped onto every step's rows; an item that only an earlier step has gets a label of its own (as an item
without the field does at the end point).
"""

from __future__ import annotations

import pandas as pd

from captrack.analysis.types import PairInput
from captrack.analysis.verdict_tables import Clusters, item_clusters, item_labels
from captrack.results.pairing import PairedItems

__all__ = ["StepLabels", "step_labels"]

StepLabels = dict[int, Clusters]
"""step -> (variant, task, metric) -> each paired item's label, aligned with captrack.analysis.curves.item_means."""

_KEYS = ["task", "doc_hash", "occ"]


def step_labels(pair: PairInput, cluster: str | None) -> tuple[StepLabels, StepLabels]:
    """(clusters, sources) of every step of `pair`'s trajectory: `cluster`'s labels (None: no --cluster) and the
    source ids the end point read ({} where none were read)."""
    clusters: StepLabels = {}
    sources: StepLabels = {}
    for step, paired in pair.steps.items():
        if cluster and cluster in pair.fields:  # the end point warned of missing fields and few clusters already
            clusters[step] = item_clusters(paired, _on_step(pair.paired, pair.fields[cluster], paired), cluster, [])
        if pair.source_ids is not None:
            sources[step] = item_labels(paired, _on_step(pair.paired, pair.source_ids, paired))
    return clusters, sources


def _on_step(end: PairedItems, values: pd.Series, step: PairedItems) -> pd.Series:
    """`values` (per row of the end point's items) per row of `step`'s items, matched by item; NaN where the end
    point does not have the item."""
    if step is end or step.items is end.items:
        return values
    table = end.items[_KEYS].assign(_value=values.astype(object).to_numpy())
    lookup = table.drop_duplicates(_KEYS).set_index(_KEYS)["_value"]
    wanted = pd.MultiIndex.from_frame(step.items[_KEYS])
    return pd.Series(lookup.reindex(wanted).to_numpy(dtype=object), index=step.items.index)
