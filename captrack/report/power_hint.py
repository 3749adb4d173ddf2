"""The power hint printed beside each verdict: what these items can detect, and how many would detect the margin.

"These 400 items detect ≥ 9.9 points; ~1,570 would detect 5": the first number is the change the verdict calls
regressed or improved with 80% power (captrack.analysis.power: planned from n and the base rate, independent
outcomes, a worst case; a capability combines its members' as the MDE of a mean), in the verdict's own unit
(points; a count metric's % of base). The second scales n by (MDE / margin)², the MDE's 1/√n law, so it is a plan
("~"), not a promise. Where the MDE is within the margin, the hint says so instead.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from captrack.analysis.power import Z_ALPHA, Z_BETA
from captrack.report.numbers import missing

__all__ = ["HINT_HEADER", "capability_hints", "ci_detects", "combined", "hint_text", "items_needed", "mde_in_unit", "task_hints"]

HINT_HEADER = "what these items detect (80% power)"


def mde_in_unit(kind: Any, mde_abs: Any, mde_pct: Any, unit: str) -> float:
    """A task's MDE in its verdict's unit: 100 × the absolute MDE for points (rates and scores), the MDE in % of
    base for a count metric; NaN where it is missing."""
    if unit == "% of base":
        return math.nan if missing(mde_pct) else float(mde_pct)
    return math.nan if missing(mde_abs) else 100.0 * float(mde_abs)


def items_needed(n: float, mde: float, target: float) -> int:
    """About how many items would detect `target`, from `n` items that detect `mde` (MDE ∝ 1/√n)."""
    return math.ceil(n * (mde / target) ** 2)


def hint_text(n: Any, mde: float, target: float, unit: str = "points", planned: float = math.nan) -> str:
    """``these 400 items detect ≥ 9.9 points; ~1,570 would detect 5``; where no change reaches 80% power on so few
    items, ``these 8 items detect no change with 80% power; ~190 would detect 5`` (`planned`: the items the normal
    approximation needs, if known); n/a without n."""
    if missing(n) or int(n) <= 0 or target <= 0:
        return "n/a"
    if missing(mde):
        more = "" if missing(planned) else f"; ~{max(int(planned), int(n) + 1):,} would detect {target:g}"
        return f"these {int(n):,} items detect no change with 80% power{more}"
    word = "% of base" if unit == "% of base" else f" {unit}"
    said = f"these {int(n):,} items detect ≥ {mde:.1f}{word}"
    if mde <= target:
        return f"{said}, within the ±{target:g} margin"
    return f"{said}; ~{items_needed(float(n), mde, target):,} would detect {target:g}"


def _planned(sd_diff: Any, target: float, unit: str) -> float:
    """The items the normal approximation needs to detect `target` points: ((z₀.₉₇₅ + z₀.₈₀)·100·sd_diff / target)²
    (NaN for % of base or without sd_diff)."""
    if unit != "points" or missing(sd_diff) or target <= 0:
        return math.nan
    return float(math.ceil(((Z_ALPHA + Z_BETA) * 100.0 * float(sd_diff) / target) ** 2))


def task_hints(per_task: pd.DataFrame, margin: float) -> list[str]:
    """One hint per row of the board's per-task table (columns n, kind, sd_diff, mde_abs, mde_pct, change_unit)."""
    rows = per_task.reindex(columns=["n", "kind", "sd_diff", "mde_abs", "mde_pct", "change_unit"])
    return [hint_text(r.n, mde_in_unit(r.kind, r.mde_abs, r.mde_pct, str(r.change_unit or "points")), margin,
                      str(r.change_unit or "points"), _planned(r.sd_diff, margin, str(r.change_unit or "points")))
            for r in rows.itertuples()]


def combined(values: list[float]) -> float:
    """The MDE of a plain mean of m estimates with MDEs `values`, √(Σ mde²)/m, as captrack.analysis.power combines a
    capability's members (NaN if any is NaN or none given)."""
    if not values or any(missing(v) for v in values):
        return math.nan
    return math.sqrt(sum(v * v for v in values)) / len(values)


def capability_hints(caps: pd.DataFrame, per_task: pd.DataFrame, margin: float) -> list[str]:
    """One hint per capability row (variant, key, items, change_unit): its members' MDEs (the per-task rows of that
    variant and capability with a verdict) combined as the MDE of their mean."""
    judged = per_task[per_task["oriented_change"].notna()] if "oriented_change" in per_task else per_task.iloc[0:0]
    mdes: dict[tuple[str, str], list[float]] = {}
    for r in judged.itertuples():
        unit = str(r.change_unit or "points")
        mdes.setdefault((str(r.variant), str(r.capability)), []).append(mde_in_unit(r.kind, r.mde_abs, r.mde_pct, unit))
    out = []
    for r in caps.itertuples():
        unit = str(getattr(r, "change_unit", "points") or "points")
        members = mdes.get((str(r.variant), str(r.key)), [])
        out.append(hint_text(r.items, combined(members), margin, unit) if unit in ("points", "% of base") else "n/a")
    return out


def ci_detects(ci95: tuple[float, float]) -> float:
    """The change a verdict of this 95% CI's width detects with 80% power: (z₀.₉₇₅ + z₀.₈₀) × its standard error
    (NaN without a CI)."""
    low, high = ci95
    if missing(low) or missing(high):
        return math.nan
    return (Z_ALPHA + Z_BETA) * (float(high) - float(low)) / (2.0 * Z_ALPHA)
