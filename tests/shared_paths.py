"""Where the team's shared folder is (imported by tests; named apart from the conftest modules)."""

from __future__ import annotations

from pathlib import Path


def shared_dir() -> Path:
    """The team's shared folder (anchors, data, nltk_data): $CAPTRACK_SHARED, ../shared, /work/shared."""
    import os

    candidates = [os.environ.get("CAPTRACK_SHARED", ""), Path(__file__).resolve().parents[2] / "shared", "/work/shared"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path(candidates[1])
