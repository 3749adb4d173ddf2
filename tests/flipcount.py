"""An independent count of the items that flip between two runs of one task: read straight from each run's lm-eval
per-sample file (what captrack's pairing and transitions must agree with; issue 54's A/A floor)."""

from __future__ import annotations

import json
from pathlib import Path

from captrack.results.runfiles import results_files

__all__ = ["flips", "run_outcomes"]


def run_outcomes(run: Path, task: str, metric: str) -> tuple[int, dict[int, float]]:
    """(the batch size the one run under `run` records, `metric` per doc id of `task`)."""
    (results,) = results_files(run)
    batch = json.loads(results.read_text(encoding="utf-8"))["config"]["batch_size"]
    (samples,) = results.parent.glob(f"samples_{task}_*.jsonl")
    rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
    return int(batch), {int(r["doc_id"]): float(r[metric]) for r in rows}


def flips(first: dict[int, float], second: dict[int, float]) -> tuple[int, float, float]:
    """(items, share that go 1→0, share that go 0→1) from `first` to `second` (the same doc ids)."""
    assert sorted(first) == sorted(second), (sorted(first), sorted(second))
    n = len(first)
    lost = sum(first[d] > 0.5 and second[d] < 0.5 for d in first)
    gained = sum(first[d] < 0.5 and second[d] > 0.5 for d in first)
    return n, lost / n, gained / n
