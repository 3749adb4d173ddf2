"""Per-sample metrics: pure scorers and the MetricSpec registry."""

from captrack.metrics.registry import (
    MetricSpec,
    all_metrics,
    declare,
    get_metric,
    get_scorer,
    score,
    scored_answer,
    scorer,
)

__all__ = ["MetricSpec", "all_metrics", "declare", "get_metric", "get_scorer", "score", "scored_answer", "scorer"]
