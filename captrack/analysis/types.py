"""Types shared by the analysis modules, kept below them so that none imports another for a type."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["VariantSpec"]


@dataclass(frozen=True)
class VariantSpec:
    """A variant to compare: its model name in the store and its post-training algorithm label."""

    name: str
    algorithm: str = ""
