"""The leaderboard stage of `captrack run`: the board's definition written from the experiment, then built."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from captrack.files import write_atomic
from captrack.pipeline.experiment import Experiment

if TYPE_CHECKING:
    from captrack.compare.board import BoardComparisons
    from captrack.report.board_spec import LeaderboardSpec
    from captrack.report.ownership import OutputFolder

__all__ = ["board_spec", "board_yaml", "claim_board", "experiment_comparisons", "write_board"]


def board_yaml(experiment: Experiment) -> dict[str, Any]:
    """The leaderboard.yaml of an experiment: its store, its comparisons and labels, its by/target/margin."""
    store = experiment.work.store
    try:
        store_ref = str(store.relative_to(experiment.leaderboard, walk_up=True))  # type: ignore[call-arg]
    except (TypeError, ValueError):
        import os

        store_ref = os.path.relpath(store, experiment.leaderboard)
    comparisons = [{"base": base.name, "variants": [
        v.labels.model_dump(exclude={"replicate", "step"})
        for v in experiment.variants if experiment.base_of(v) == base.name]} for base in experiment.bases]
    imported = any(c.source for c in experiment.checkpoints)
    how = "generations made elsewhere, scored by `captrack import`" if imported else "real evaluation (lm-eval)"
    board: dict[str, Any] = {
        "title": experiment.title or experiment.name, "description": experiment.description,
        "source_note": experiment.source_note or f"captrack run {experiment.source.name}: {how} of every checkpoint",
        "store": store_ref, "comparisons": [c for c in comparisons if c["variants"]], "bootstrap": 1000}
    from captrack.analysis.verdicts import DEFAULT_MARGIN

    board |= {"margin": experiment.margin} if experiment.margin != DEFAULT_MARGIN else {}
    board |= {"smoke": True} if experiment.smoke else {}
    return board | ({"by": list(experiment.by)} if experiment.by else {}) | ({"target": experiment.target} if experiment.target else {})


def board_spec(experiment: Experiment) -> LeaderboardSpec:
    """The experiment's board definition: the board's settings checked as leaderboard.yaml's would be, its
    variants the experiment's own labels records (what `captrack run` writes to leaderboard.yaml, never read back)."""
    import dataclasses

    from captrack.report.leaderboard import parse_spec

    spec = parse_spec(board_yaml(experiment), experiment.leaderboard)
    variants = tuple(v.labels for base in experiment.bases for v in experiment.variants if experiment.base_of(v) == base.name)
    return dataclasses.replace(spec, variants=variants)


def claim_board(experiment: Experiment) -> OutputFolder:
    """Check that the experiment's board folder is captrack's (before any work, and again right before writing).

    The experiment file and the work folder may lie inside it (a committed board's ``experiment.yaml``,
    ``leaderboard: .``): both are left alone. A leaderboard.yaml that `captrack run` did not write is not.

    Raises:
        ForeignFilesError: the folder holds a file captrack did not write, named (captrack.report.ownership).
    """
    from captrack.report.ownership import claim_folder

    return claim_folder(experiment.leaderboard, "leaderboard", [experiment.source, experiment.workdir])


def experiment_comparisons(experiment: Experiment) -> BoardComparisons:
    """The experiment's comparisons, computed now from its store and its own definition (no file of the board read)."""
    from captrack.compare.board import board_comparisons

    return board_comparisons(board_spec(experiment))


def write_board(experiment: Experiment) -> BoardComparisons:
    """Write the experiment's leaderboard.yaml (from the experiment, never by hand) and build the board;
    returns the comparisons it shows.

    Raises:
        ForeignFilesError: the board folder holds a file captrack did not write; nothing was written.
    """
    import yaml

    from captrack.compare.board import board_comparisons, publish_board
    from captrack.report.ownership import RUN_HEADER

    claimed = claim_board(experiment)
    spec = board_spec(experiment)
    comparisons = board_comparisons(spec)
    experiment.leaderboard.mkdir(parents=True, exist_ok=True)
    text = RUN_HEADER + experiment.source.name + "`; edit the experiment, not this file.\n"
    text += yaml.safe_dump(board_yaml(experiment), sort_keys=False, allow_unicode=True)
    definition = write_atomic(experiment.leaderboard / "leaderboard.yaml", text)
    publish_board(spec, comparisons, claimed, also_written=(definition,))
    return comparisons
