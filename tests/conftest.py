"""Shared fixtures: synthetic lm-eval runs written in lm-eval 0.4.13's exact file format."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def shared_dir() -> Path:
    """The team's shared folder (anchors, data, nltk_data): $CAPTRACK_SHARED, ../shared, /work/shared."""
    import os

    candidates = [os.environ.get("CAPTRACK_SHARED", ""), Path(__file__).resolve().parents[2] / "shared", "/work/shared"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path(candidates[1])
