"""The metric another tool's per-item outcomes are stored as by `captrack import` (captrack.imports.tool_outcomes)."""

from __future__ import annotations

from captrack.metrics.registry import MetricSpec, declare

__all__: list[str] = []

declare(MetricSpec("outcome", "higher", "binary",
                   "the evaluating tool's own per-item verdict, imported: 1 correct, 0 not, partial credit between "
                   "(NeMo Evaluator's reward, Inspect's score, a lighteval metric, Every-Eval-Ever's evaluation.score)"))
