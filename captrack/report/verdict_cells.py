"""Verdict cells of the leaderboard pages and report.md: the notes that say what a verdict, its CI and `*` mean,
the verdict cell itself, and which side a row's colour is on."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from captrack.report.html import esc
from captrack.report.numbers import MIXED_UNITS, is_significant, missing, verdict_text

__all__ = ["CI_METHOD", "COLOUR_NOTE", "GATE_RULE", "RELATIVE_COLUMN", "SIGNIFICANCE", "VERDICT_MARKS", "VERDICT_RULE", "capability_units", "mark",
           "oriented_task", "verdict_td"]

CI_METHOD = "95% score CI of the paired change (Tango 1998) for binary metrics; adjusted Wald otherwise"
"""The verdict's interval, said once per page (captrack's docs/statistics.md has the details)."""

VERDICT_RULE = ("Δ is the observed change, variant − base, oriented so that + is better: in points (100 × the change of "
                "a rate or score) or, for count metrics, in % of the base mean; a capability's Δ is the mean of its "
                "metrics' Δ. Each Δ is printed with its 95% CI and the verdict they give at ± the margin: regressed where "
                "the 95% CI lies below 0, improved where it lies above 0, equivalent where the 90% CI lies inside ± the "
                "margin, else inconclusive (too few items to tell); a metric without a better side is changed where its "
                f"95% CI excludes 0. CI: {CI_METHOD} (captrack's docs/statistics.md, Verdicts).")
GATE_RULE = ("The gate (`--fail-on regressed`) checks, per variant, its capabilities and its (task, metric)s outside the "
             "taxonomy, and fails the cells whose regression Holm's step-down test rejects at a family-wise error of "
             "2.5% (one-sided p-values of the verdicts' own tests): an unchanged variant fails it at most 2.5% of the "
             "time, however many capabilities it has.")
SIGNIFICANCE = ("Significant (marked *, counted in \"significant tasks\") means one thing: the verdict is regressed, "
                "improved or changed, i.e. the 95% CI of Δ excludes 0.")
COLOUR_NOTE = ("Colours say better (blue) or worse (red) whatever the metric's direction. Relative drift (% of the base "
               "value, CapTrack's number) is shown in its own column for comparison with CapTrack; it decides no verdict.")

RELATIVE_COLUMN = "relative drift (% of base, CapTrack-compatible)"
"""The header of every column of relative drift: CapTrack's unit, deciding no verdict."""

VERDICT_MARKS = {"regressed": "▼", "improved": "▲", "equivalent": "≈", "inconclusive": "?", "changed": "•"}


def mark(verdict: object) -> str:
    """``*`` where a cell is significant (verdict regressed, improved or changed), else ``""``."""
    return "*" if is_significant(verdict) else ""


def verdict_td(change: Any, low: Any, high: Any, unit: str, verdict: object, margin: float) -> str:
    """The verdict cell: the change in its unit, its 95% CI and the verdict (``-4.0 points [-7.1, -1.2] → regressed
    at ±5``), styled per verdict, sorted by the change."""
    text = verdict_text(change, low, high, unit, verdict, margin)
    if not text:
        return "<td></td>"
    sort = "" if missing(change) else f"{float(change):.6g}"
    return f'<td class="verdict v-{esc(verdict)}" data-sort="{sort}">{esc(text)}</td>'


def oriented_task(direction: object, rel: float) -> float:
    """A task row's colour side: + better; NaN (uncoloured) for a metric without a better side."""
    if direction == "neutral" or rel is None or math.isnan(rel):
        return math.nan
    return -rel if direction == "lower" else rel


def capability_units(drift: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(variant, capability or group key) -> the unit of its Δ, read from its member metrics' change_unit in drift.csv
    (metrics with a better side; all members where none has one): "points", "% of base" or both."""
    if "change_unit" not in drift:
        return {}
    rows = drift[drift["change_unit"].notna() & (drift["change_unit"].astype(str) != "")]
    found: dict[tuple[str, str], dict[bool, set[str]]] = {}
    for variant, capability, group, direction, unit in zip(rows["variant"], rows["capability"], rows["group"],
                                                           rows["direction"], rows["change_unit"], strict=True):
        for key in (capability, group):
            if isinstance(key, str) and key:
                found.setdefault((str(variant), key), {True: set(), False: set()})[direction != "neutral"].add(str(unit))
    out = {}
    for key, units in found.items():
        shown = units[True] or units[False]
        out[key] = next(iter(shown)) if len(shown) == 1 else MIXED_UNITS
    return out
