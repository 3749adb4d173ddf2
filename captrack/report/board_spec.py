"""A parsed leaderboard.yaml (`LeaderboardSpec`): its variants' labels (captrack.labels) and bases.

Kept below the modules that build and render a leaderboard (leaderboard, leaderboard_pages, drilldown,
pair_tables), so that none of them imports another for these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.labels import VariantLabels

__all__ = ["LeaderboardSpec"]


@dataclass(frozen=True)
class LeaderboardSpec:
    """A parsed leaderboard.yaml."""

    folder: Path
    title: str
    description: str
    source_note: str
    variants: tuple[VariantLabels, ...]
    bases: dict[str, str]
    """Each variant's base (variant name -> base name)."""
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
