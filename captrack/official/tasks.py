"""lm-eval hooks shared by every official CapTrack task (tasks/<family>/utils.py re-exports them).

``load`` reads one config (``custom_dataset``) from the mirror when one is set, else from the hub
dataset through the Hugging Face cache, ``process_results`` runs the config's
registered scorers on the response (row fields plus the row's ``meta``) and logs the judge metrics
no judge prompt exists for as None, and ``nanmean`` aggregates while skipping those. Judged metrics
(captrack/judges/catalog.py) are not logged here: `captrack judge` scores them from the samples.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

from captrack.metrics import score
from captrack.official.configs import get_config
from captrack.official.hub import load_hub_config
from captrack.official.mirror import DATA_DIR_ENV, load_config

__all__ = ["load", "nanmean", "process_results", "scoring_doc"]


def load(**metadata: Any) -> Any:
    """``custom_dataset`` entry: the task's config (``metadata.config``) from the mirror, else the hub."""
    if metadata.get("data_dir") or os.environ.get(DATA_DIR_ENV):
        return load_config(**metadata)
    return load_hub_config(**metadata)


def scoring_doc(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The row with its ``meta`` fields lifted to the top level (row fields win on a clash)."""
    meta = doc.get("meta") or {}
    if isinstance(meta, str):
        meta = json.loads(meta) if meta.strip() else {}
    return {**meta, **doc}


def process_results(doc: Mapping[str, Any], results: list[str]) -> dict[str, float | None]:
    """Score one generated response with the config's scorers; metrics awaiting a judge prompt are None (NaN)."""
    config = get_config(str(doc["config"]))
    flat = scoring_doc(doc)
    values: dict[str, float | None] = {}
    for name in config.scorers:
        values.update(score(name, flat, results[0]))
    values.update({metric: None for metric in config.judge_metrics})
    return values


def nanmean(items: Iterable[Any]) -> float:
    """Mean of the scored values (None and NaN skipped); NaN when nothing was scored."""
    values = [float(v) for v in items if v is not None and not math.isnan(float(v))]
    return sum(values) / len(values) if values else math.nan
