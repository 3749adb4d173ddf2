"""A leaderboard folder, built: one comparison per base of its definition (or its scores), then the pages."""

from __future__ import annotations

from pathlib import Path

from captrack.analysis.comparison import CompareOptions, Comparison
from captrack.compare.use_case import compare
from captrack.labels import VariantLabels
from captrack.paths import expand_path
from captrack.report.board_spec import LeaderboardSpec
from captrack.report.drilldown import DRILL_LIMIT
from captrack.report.leaderboard import load_spec
from captrack.report.ownership import OutputFolder, claim_folder, write_manifest

__all__ = ["BoardComparisons", "board_comparisons", "build_leaderboard", "publish_board", "spec_inputs"]

BoardComparisons = list[tuple[Comparison, dict[str, VariantLabels]]]
"""One comparison per base of a board, with the labels of its variants."""


def board_comparisons(spec: LeaderboardSpec) -> BoardComparisons:
    """Compare every base of the leaderboard with its variants (or read its scores / reference files)."""
    from captrack.analysis.scores import compare_scores, read_scores, scores_from_reference
    from captrack.results.store import Store

    if spec.store is not None:
        out = []
        options = CompareOptions(bootstrap=spec.bootstrap, seed=spec.seed, by=spec.by, margin=spec.margin,
                                 pair_deltas=True, drill_limit=DRILL_LIMIT)
        with Store(spec.store, read_only=True) as store:
            for base in dict.fromkeys(spec.bases.values()):
                members = [v for v in spec.variants if spec.bases[v.name] == base]
                comparison = compare(store, base, members, options)
                out.append((comparison, {v.name: v for v in members}))
        return out
    if spec.scores is not None:
        frame = read_scores(spec.scores)
    else:
        ref = spec.reference
        variants = {str(k): expand_path(str(p), spec.folder) for k, p in (ref.get("variants") or {}).items()}
        frame = scores_from_reference(expand_path(str(ref["base"]), spec.folder), variants)
    comparison = compare_scores(frame)
    labels = {v.name: v for v in spec.variants}
    for v in comparison.variants:
        labels.setdefault(v.name, v)
    return [(comparison, labels)]


def spec_inputs(spec: LeaderboardSpec) -> list[Path]:
    """The files a board reads: its definition and its store, scores or reference files (kept when inside its folder)."""
    paths = [spec.folder / "leaderboard.yaml", *(p for p in (spec.store, spec.scores) if p is not None)]
    ref = spec.reference or {}
    named = [ref.get("base"), *(ref.get("variants") or {}).values()] if ref else []
    return paths + [expand_path(str(p), spec.folder) for p in named if p]


def publish_board(spec: LeaderboardSpec, comparisons: BoardComparisons, claimed: OutputFolder,
                  also_written: tuple[Path, ...] = ()) -> list[Path]:
    """Write the board's pages into ``spec.folder`` (claimed first, captrack.report.ownership) and its manifest.

    Args:
        also_written: files this write put there itself before the pages (`captrack run`'s leaderboard.yaml).
    """
    from captrack.analysis.board_summary import board_tables
    from captrack.compare.step_texts import board_step_texts
    from captrack.report import figures
    from captrack.report.background import Background
    from captrack.report.leaderboard_pages import write_pages

    made = Background(warm_up=[(figures.warm_up, (), {})])  # the figures' process starts up while the tables are computed
    try:
        texts = board_step_texts(spec.store, [c for c, _ in comparisons], spec.bases)
        computed = board_tables(comparisons, DRILL_LIMIT if spec.store is not None else 0, spec.target)
        written = write_pages(spec, comparisons, computed, texts, made)
    finally:
        made.close()
    write_manifest(spec.folder, "leaderboard", [*written, *also_written], claimed)
    return written


def build_leaderboard(folder: str | Path) -> list[Path]:
    """Regenerate everything in a leaderboard folder; returns the files written.

    Raises:
        ForeignFilesError: the folder holds a file captrack did not write (named); nothing was written.
    """
    spec = load_spec(folder)
    claimed = claim_folder(spec.folder, "leaderboard", spec_inputs(spec))  # before the comparisons: fail fast
    return publish_board(spec, board_comparisons(spec), claimed)
