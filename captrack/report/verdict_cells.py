"""Verdict cells of the leaderboard pages: the verdict itself, and which side a task row's colour is on."""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.html import esc

__all__ = ["VERDICT_NOTE", "group_side", "oriented_task", "verdict_td"]

VERDICT_NOTE = ("Colours say better (blue) or worse (red) whatever the metric's direction; the numbers printed are the "
                "raw drift. Verdict: Δ, the change oriented so that + is better (points for binary and score metrics, % of "
                "the base mean for counts), is regressed where its 95% CI lies below 0, improved where it lies above 0, "
                "equivalent where its 90% CI lies inside ± the margin, else inconclusive (too few items to tell); a metric "
                "without a better side (verbosity, formatting) is changed where its 95% CI excludes 0.")


def verdict_td(verdict: object) -> str:
    """A verdict cell, styled per verdict (inconclusive in grey italics, regressed red, improved blue)."""
    text = verdict if isinstance(verdict, str) else ""
    return f'<td class="verdict v-{esc(text)}">{esc(text)}</td>' if text else "<td></td>"


def oriented_task(direction: object, rel: float) -> float:
    """A task row's colour side: + better; NaN (uncoloured) for a metric without a better side."""
    if direction == "neutral" or rel is None or math.isnan(rel):
        return math.nan
    return -rel if direction == "lower" else rel


def group_side(oriented: pd.DataFrame, group: str, variant: str) -> float | None:
    """The colour side of a checkpoint's group mean: its oriented drift (None: colour by the value itself)."""
    label = f"{group} (mean)"
    if oriented.empty or label not in oriented.index or variant not in oriented.columns:
        return None
    return float(oriented.loc[label, variant])
