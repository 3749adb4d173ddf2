"""A leaderboard folder, built: one comparison per base of its definition (or its scores), then the pages."""

from __future__ import annotations

from pathlib import Path

from captrack.analysis.compare import CompareOptions, Comparison
from captrack.analysis.types import VariantSpec
from captrack.compare.use_case import compare
from captrack.paths import expand_path
from captrack.report.board_spec import LeaderboardSpec, VariantLabels
from captrack.report.drilldown import DRILL_LIMIT
from captrack.report.leaderboard import load_spec

__all__ = ["board_comparisons", "build_leaderboard"]


def board_comparisons(spec: LeaderboardSpec) -> list[tuple[Comparison, dict[str, VariantLabels]]]:
    """Compare every base of the leaderboard with its variants (or read its scores / reference files)."""
    from captrack.analysis.scores import compare_scores, read_scores, scores_from_reference
    from captrack.results.store import Store

    if spec.store is not None:
        out = []
        options = CompareOptions(bootstrap=spec.bootstrap, seed=spec.seed, by=spec.by, margin=spec.margin,
                                 pair_deltas=True, drill_limit=DRILL_LIMIT)
        with Store(spec.store, read_only=True) as store:
            for base in dict.fromkeys(v.base for v in spec.variants):
                members = [v for v in spec.variants if v.base == base]
                comparison = compare(store, base, [VariantSpec(v.name, v.algorithm) for v in members], options)
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
        labels.setdefault(v.name, VariantLabels(name=v.name, base=comparison.base, algorithm=v.algorithm))
    return [(comparison, labels)]


def build_leaderboard(folder: str | Path) -> list[Path]:
    """Regenerate everything in a leaderboard folder; returns the files written."""
    from captrack.report.leaderboard_pages import write_pages

    spec = load_spec(folder)
    return write_pages(spec, board_comparisons(spec))
