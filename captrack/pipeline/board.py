"""The leaderboard stage of `captrack run`: the board's definition written from the experiment, then built."""

from __future__ import annotations

from typing import Any

from captrack.files import write_atomic
from captrack.pipeline.experiment import Experiment

__all__ = ["board_yaml", "write_board"]


def board_yaml(experiment: Experiment) -> dict[str, Any]:
    """The leaderboard.yaml of an experiment: its store, its comparisons and labels, its by/target/margin."""
    store = experiment.work.store
    try:
        store_ref = str(store.relative_to(experiment.leaderboard, walk_up=True))  # type: ignore[call-arg]
    except (TypeError, ValueError):
        import os

        store_ref = os.path.relpath(store, experiment.leaderboard)
    comparisons = [{"base": base.name, "variants": [
        {"name": v.name, "algorithm": v.algorithm, "family": v.family, "size": v.size, "data": v.data}
        for v in experiment.variants if experiment.base_of(v) == base.name]} for base in experiment.bases]
    imported = any(c.source for c in experiment.checkpoints)
    how = "generations made elsewhere, scored by `captrack import`" if imported else "real evaluation (lm-eval)"
    board: dict[str, Any] = {
        "title": experiment.title or experiment.name, "description": experiment.description,
        "source_note": experiment.source_note or f"captrack run {experiment.source.name}: {how} of every checkpoint",
        "store": store_ref, "comparisons": [c for c in comparisons if c["variants"]], "bootstrap": 1000}
    from captrack.analysis.verdicts import DEFAULT_MARGIN

    board |= {"margin": experiment.margin} if experiment.margin != DEFAULT_MARGIN else {}
    return board | ({"by": list(experiment.by)} if experiment.by else {}) | ({"target": experiment.target} if experiment.target else {})


def write_board(experiment: Experiment) -> None:
    """Write the experiment's leaderboard.yaml (from the experiment, never by hand) and build the board."""
    import yaml

    from captrack.compare.board import build_leaderboard

    experiment.leaderboard.mkdir(parents=True, exist_ok=True)
    text = "# Written by `captrack run " + experiment.source.name + "`; edit the experiment, not this file.\n"
    text += yaml.safe_dump(board_yaml(experiment), sort_keys=False, allow_unicode=True)
    write_atomic(experiment.leaderboard / "leaderboard.yaml", text)
    build_leaderboard(experiment.leaderboard)
