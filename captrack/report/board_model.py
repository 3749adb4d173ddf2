"""What a leaderboard's index page and README show: the capability grid (Cells) and the Board record."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from captrack.report.numbers import is_significant, missing
from captrack.report.verdict_cells import SIGNIFICANCE, VERDICT_RULE
from captrack.taxonomy import load_taxonomy

if TYPE_CHECKING:
    from captrack.report.board_spec import LeaderboardSpec

__all__ = ["AGGREGATE_NOTE", "NOISE_NOTE", "Board", "Cells", "board_cells", "scale_label"]


@dataclass(frozen=True)
class Cells:
    """The capability × variant grid of the heatmap and the tables beside it: one frame per quantity, row labels
    (``C1 Parametric knowledge & skills``, ``CAN (mean)``) by variants."""

    value: pd.DataFrame  # printed: the verdict's change Δ (boards with verdicts) or relative drift in % (aggregate)
    colour: pd.DataFrame  # the colour side, + better: Δ (NaN without a better side), or oriented relative drift
    significant: pd.DataFrame  # verdict regressed, improved or changed (the 95% CI of Δ excludes 0)
    verdict: pd.DataFrame
    low: pd.DataFrame  # the 95% CI of Δ
    high: pd.DataFrame
    unit: pd.DataFrame  # the unit of Δ: points, % of base, or both
    with_verdicts: bool

    @cached_property
    def at(self) -> dict[str, dict[tuple[str, str], Any]]:
        """Each quantity's cells by (row label, variant), as ``frame.at`` gives them: the index page and README read
        the grid cell by cell (thousands of cells, each a dict look-up rather than a pandas one)."""
        frames = {"value": self.value, "colour": self.colour, "verdict": self.verdict, "low": self.low, "high": self.high,
                  "unit": self.unit}
        return {name: {(label, variant): cell for variant in frame.columns
                       for label, cell in zip(frame.index, frame[variant].to_numpy(), strict=True)}
                for name, frame in frames.items()}


def board_cells(caps: pd.DataFrame, variants: list[str], keys: tuple[str, ...], with_verdicts: bool,
           units: dict[tuple[str, str], str]) -> Cells:
    """Each capability's (and group's) Δ, its CI and verdict, per variant, read from capabilities.csv's columns;
    without verdicts (aggregate scores) the relative drift instead."""
    taxonomy = load_taxonomy()
    rows: list[tuple[str, str, str]] = []
    for group in taxonomy.groups:
        rows.append(("group", group.key, f"{group.key} (mean)"))
        rows += [("capability", c.key, f"{c.key} {c.name}") for c in group.capabilities]
    shown = caps[caps["n_metrics"] > 0]
    present = set(zip(shown["level"], shown["key"], strict=True))
    rows = [r for r in rows if (r[0], r[1]) in present and (not keys or r[1] in keys or r[0] == "group")]
    labels, columns = [r[2] for r in rows], {v: j for j, v in enumerate(variants)}
    at = {(level, key): i for i, (level, key, _) in enumerate(rows)}
    shape = (len(rows), len(variants))
    value, colour, low, high = (np.full(shape, np.nan) for _ in range(4))
    verdict, unit = np.full(shape, "", dtype=object), np.full(shape, "", dtype=object)
    relative = caps["oriented_drift_pct"] if "oriented_drift_pct" in caps else caps["mean_rel_drift_pct"]
    nan = pd.Series(math.nan, index=caps.index)
    change = caps["oriented_change"] if "oriented_change" in caps else nan
    ci_low = caps["change_ci_low"] if "change_ci_low" in caps else nan
    ci_high = caps["change_ci_high"] if "change_ci_high" in caps else nan
    said = caps["verdict"] if "verdict" in caps else pd.Series(None, index=caps.index, dtype=object)
    for level, key, variant, drift, side, delta, lo, hi, found in zip(
            caps["level"], caps["key"], caps["variant"], caps["mean_rel_drift_pct"], relative, change, ci_low, ci_high,
            said, strict=True):
        i, j = at.get((level, key)), columns.get(variant)
        if i is None or j is None:
            continue
        if with_verdicts:  # the colour: Δ itself, white where the capability has no better side
            value[i, j], colour[i, j] = delta, (math.nan if missing(side) else delta)
            low[i, j], high[i, j] = lo, hi
            verdict[i, j] = found if isinstance(found, str) else ""
            unit[i, j] = units.get((str(variant), str(key)), "points")
        else:
            value[i, j], colour[i, j] = drift, side

    def frame(data: np.ndarray, kind: type) -> pd.DataFrame:
        return pd.DataFrame(data, index=labels, columns=variants, dtype=kind)

    significant = pd.DataFrame(np.vectorize(is_significant, otypes=[bool])(verdict) if verdict.size else
                               np.zeros(shape, dtype=bool), index=labels, columns=variants)
    return Cells(frame(value, float), frame(colour, float), significant, frame(verdict, object), frame(low, float),
                 frame(high, float), frame(unit, object), with_verdicts)


def scale_label(cells: Cells) -> str:
    """The unit of the grid's Δ, as the heatmap's colour bar and the README's heading say it."""
    units = {str(u) for u in cells.unit.to_numpy().ravel() if u}
    if units <= {"points"}:
        return "points"
    if units == {"% of base"}:
        return "% of base"
    return "points; count metrics % of base"


@dataclass(frozen=True)
class Board:
    """Everything the index page and README of a leaderboard show."""

    spec: LeaderboardSpec
    cells: Cells
    summary: pd.DataFrame
    checkpoints: pd.DataFrame
    capabilities: pd.DataFrame
    per_task: pd.DataFrame
    scoring: pd.DataFrame
    said: list[str]
    aggregate_only: bool
    html_sections: list[str] = field(default_factory=list)  # extra sections (base → variant pairs, per-field tables)
    md_sections: list[str] = field(default_factory=list)
    within_floor: frozenset[tuple[str, str, str]] = frozenset()  # (variant, task, metric) within the backend's A/A floor


AGGREGATE_NOTE = ("Aggregate scores only: this source has no per-item data, so no confidence intervals, no item "
                  "transitions (F/BT), no minimum detectable effects, no ranking of algorithms and no drill-down can be "
                  "computed. None of these drifts can be told apart from noise: every number is a point estimate of unknown precision.")
NOISE_NOTE = (f"{VERDICT_RULE} {SIGNIFICANCE} Relative drift is CapTrack's number, 100 × (variant − base) / base, shown "
              "in its own column and deciding nothing; \"rose\" and \"fell\" say which way a value moved, so for a "
              "lower-is-better metric (W2's overreach, for one) a rise is a change for the worse. What these items detect: "
              "the smallest change, in Δ's unit, the verdict finds with 80% power, planned with its own test from n and the "
              "base rate under independent outcomes (a worst case), and about how many items (n × (that change / margin)²) "
              "would detect the margin.")
