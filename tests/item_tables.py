"""Per-item distribution tables (captrack.analysis.distribution.diagnose's rows) made from random option
loglikelihoods, for the tests of the table kept on disk and of its CSV text."""

from __future__ import annotations

import numpy as np
import pandas as pd

from captrack.analysis.distribution import diagnose

__all__ = ["diagnosed_items"]


def diagnosed_items(variant: str, n: int, seed: int, algorithm: str = "SFT") -> pd.DataFrame:
    """`n` items of one variant over three tasks, four options each, some doc hashes repeated."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "variant": variant, "algorithm": algorithm, "task": [f"t{i % 3}" for i in range(n)],
        "doc_hash": [f"{(i * 7919) % 1000:03d}-h" for i in range(n)], "gold": rng.integers(0, 4, n),
        "base_ll": [list(-rng.gamma(2.0, 2.0, 4)) for _ in range(n)],
        "variant_ll": [list(-rng.gamma(2.0, 2.0, 4)) for _ in range(n)]})
    return diagnose(frame)[0]
