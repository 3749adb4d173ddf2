"""How every page prints a number, a CI and a change with its verdict: one way, everywhere.

A value that rounds to zero prints ``0.0`` (never ``-0.0`` or ``+0.0``), except a change whose CI excludes 0,
which gets the decimals that show its sign (``+0.04 [+0.01, +0.08]``). A CI whose ends would print
alike is printed with more decimals, and one that still has no spread says so instead of looking
like certainty. A change is printed in its verdict's own units, its 95% CI beside it, then the
verdict: ``-4.0 points [-7.1, -1.2] → regressed at ±5``.
"""

from __future__ import annotations

import math
from typing import Any

from captrack.analysis.verdicts import SIGNIFICANT_VERDICTS

__all__ = ["MIXED_UNITS", "NO_SPREAD", "SIGNIFICANT", "ZERO_WIDTH", "change_text", "ci_text", "excludes_zero", "is_significant",
           "missing", "plain", "signed", "signed_change", "verdict_text", "zero_width"]

SIGNIFICANT = SIGNIFICANT_VERDICTS
"""The verdicts whose 95% CI of the change excludes 0: the only cells a page calls significant (``*``)."""

ZERO_WIDTH = "no spread: a CI of width 0 is no certainty"
"""Shown instead of "[0.0, 0.0]": every resample (or every item) gave the same change, e.g. no item flipped."""

NO_SPREAD = "no spread at this precision"
"""Shown where a CI's ends differ but still print alike with two more decimals."""

MIXED_UNITS = "points / % of base"
"""The unit of a capability whose members' changes are in points (rates, scores) and % of base (counts)."""

_EXTRA = 2  # decimals a CI may add so that its ends differ, or a nonzero end does not print as zero


def missing(value: Any) -> bool:
    """Whether a cell value is absent (None, NaN, pandas' NA or an empty string)."""
    if value is None or (isinstance(value, str) and not value):
        return True
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False


def _rounds_to_zero(value: float, digits: int) -> bool:
    return float(f"{abs(value):.{digits}f}") == 0.0


def signed(value: Any, digits: int = 1, suffix: str = "") -> str:
    """``+4.0``, ``-4.0``, or ``0.0`` (no sign) where the value rounds to zero; ``n/a`` where it is missing."""
    if missing(value):
        return "n/a"
    number = float(value)
    if _rounds_to_zero(number, digits):
        return f"{0.0:.{digits}f}{suffix}"
    return f"{number:+.{digits}f}{suffix}"


def excludes_zero(low: Any, high: Any) -> bool:
    """Whether a CI exists and lies wholly above or wholly below 0."""
    return not (missing(low) or missing(high)) and (float(low) > 0.0 or float(high) < 0.0)


_MOST = 6  # the most decimals a change whose CI excludes 0 is given before it is written in scientific notation


def signed_change(value: Any, away_from_zero: bool, digits: int = 1, suffix: str = "") -> str:
    """A change as `signed` prints it, except that one whose 95% CI excludes 0 (`away_from_zero`) never prints as a
    rounded ``0.0``: it gets decimals until its sign shows (``+0.04``), never a claim of no change beside a CI that
    says there was one."""
    if missing(value) or not away_from_zero or float(value) == 0.0:
        return signed(value, digits, suffix)
    for shown in range(digits, _MOST + 1):
        if not _rounds_to_zero(float(value), shown):
            return signed(value, shown, suffix)
    return f"{float(value):+.1e}{suffix}"


def plain(value: Any, digits: int = 1, suffix: str = "") -> str:
    """An unsigned number (``4.0``; ``0.0`` for a value that rounds to zero); ``n/a`` where it is missing."""
    if missing(value):
        return "n/a"
    number = float(value)
    return f"{0.0 if _rounds_to_zero(number, digits) else number:.{digits}f}{suffix}"


def zero_width(low: Any, high: Any) -> bool:
    """Whether a CI exists and has no width (its ends are the same number)."""
    return not (missing(low) or missing(high)) and float(low) == float(high)


def _decimals(low: float, high: float, digits: int) -> int | None:
    """The fewest decimals (from `digits`, at most `_EXTRA` more) at which the ends print apart and neither nonzero
    end prints as zero; None where they still print alike."""
    for shown in range(digits, digits + _EXTRA + 1):
        apart = signed(low, shown) != signed(high, shown)
        hidden = any(x != 0.0 and _rounds_to_zero(x, shown) for x in (low, high))
        if apart and not hidden:
            return shown
    return digits + _EXTRA if signed(low, digits + _EXTRA) != signed(high, digits + _EXTRA) else None


def ci_text(low: Any, high: Any, digits: int = 1, suffix: str = "") -> str:
    """``[-7.1, -1.2]``; ``(no spread: ...)`` for a CI of width 0 or one whose ends print alike; ``n/a`` without a CI."""
    if missing(low) or missing(high):
        return "n/a"
    if zero_width(low, high):
        return f"({ZERO_WIDTH})"
    shown = _decimals(float(low), float(high), digits)
    if shown is None:
        return f"({NO_SPREAD})"
    return f"[{signed(low, shown, suffix)}, {signed(high, shown, suffix)}]"


def is_significant(verdict: Any) -> bool:
    """Whether a cell is significant: its verdict is regressed, improved or changed (its 95% CI excludes 0)."""
    return isinstance(verdict, str) and verdict in SIGNIFICANT


def _unit_word(unit: str) -> str:
    return {"points": " points", "% of base": "% of base"}.get(unit, f" ({unit})" if unit else "")


def change_text(change: Any, low: Any, high: Any, unit: str = "points") -> str:
    """The observed change in its unit with its 95% CI: ``-4.0 points [-7.1, -1.2]``; ``n/a`` without a change."""
    if missing(change):
        return "n/a"
    return f"{signed_change(change, excludes_zero(low, high))}{_unit_word(unit)} {ci_text(low, high)}"


def verdict_text(change: Any, low: Any, high: Any, unit: str, verdict: Any, margin: float) -> str:
    """The change, its 95% CI and the verdict they give at ± `margin`: ``-4.0 points [-7.1, -1.2] → regressed at ±5``;
    ``""`` where there is no verdict."""
    if not isinstance(verdict, str) or not verdict:
        return ""
    return f"{change_text(change, low, high, unit)} → {verdict} at ±{margin:g}"
