"""A parsed leaderboard.yaml (`LeaderboardSpec`) and its variants' labels (`VariantLabels`).

Kept below the modules that build and render a leaderboard (leaderboard, leaderboard_pages, drilldown,
pair_tables), so that none of them imports another for these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["LeaderboardSpec", "VariantLabels"]


@dataclass(frozen=True)
class VariantLabels:
    """One variant of a leaderboard and the labels it is grouped by."""

    name: str
    base: str
    family: str = ""
    size: str = ""
    algorithm: str = ""
    data: str = ""


@dataclass(frozen=True)
class LeaderboardSpec:
    """A parsed leaderboard.yaml."""

    folder: Path
    title: str
    description: str
    source_note: str
    variants: tuple[VariantLabels, ...]
    store: Path | None = None
    scores: Path | None = None
    reference: dict[str, Any] = field(default_factory=dict)
    capabilities: tuple[str, ...] = ()
    bootstrap: int = 1000
    seed: int = 0
    by: tuple[str, ...] = ()
    target: str = ""
    margin: float = 5.0  # the verdicts' equivalence margin (captrack.analysis.verdicts)
    smoke: bool = False  # a smoke test (`captrack run --quick`): no ordering of algorithms, no findings beyond verdicts
