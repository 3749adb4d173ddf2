"""What a board's per-algorithm rows cover, said beside them: the interval of an algorithm's mean drift is drawn only
from enough of its variants (captrack.analysis.algorithm_interval), and an algorithm with a single checkpoint is a
checkpoint, so every algorithm-level statement about it compares checkpoints, not algorithms. Plain text: each page
escapes it as it escapes any other sentence."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from captrack.analysis.algorithm_interval import MIN_VARIANTS

__all__ = ["INTERVAL_NOTE", "algorithm_notes", "one_checkpoint_sentence", "single_checkpoint_algorithms"]

INTERVAL_NOTE = (f"An algorithm's 95% CI is drawn from {MIN_VARIANTS} or more of its variants only: it covers the algorithm's "
                 "mean drift (what another seed of it would show), counting the spread between its variants (t quantiles) "
                 "and the error of the base run they all share (a joint item bootstrap). With fewer variants there is "
                 "none (algorithms.csv, ci_note, says why).")
"""Said under every board's table of algorithms."""


def one_checkpoint_sentence(algorithms: Iterable[str]) -> str | None:
    """The caveat for the algorithms with a single checkpoint (None without any)."""
    names = sorted(dict.fromkeys(str(a) for a in algorithms))
    if not names:
        return None
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    has = "has one checkpoint" if len(names) == 1 else "have one checkpoint each"
    return (f"{listed} {has}: every statement this board makes about {'it' if len(names) == 1 else 'them'} by "
            "algorithm (the table by algorithm, the rankings) compares checkpoints, not algorithms; another seed of the "
            "same algorithm may land elsewhere.")


def single_checkpoint_algorithms(capability_rows: pd.DataFrame) -> list[str]:
    """The labelled algorithms of which rows with `algorithm` and `variant` columns hold one variant."""
    labelled = capability_rows[capability_rows["algorithm"].map(lambda a: isinstance(a, str) and a != "")]
    counts = labelled.groupby("algorithm", sort=True)["variant"].nunique()
    return [str(name) for name, n in counts.items() if int(n) == 1]


def algorithm_notes(summary: pd.DataFrame, aggregate_only: bool = False) -> list[str]:
    """The notes under a table of algorithms (board_summary.algorithm_summary's rows): what its CI covers (not for
    aggregate scores, which have none), and the caveat for algorithms with one checkpoint."""
    if summary.empty:
        return []
    counts = summary.groupby("algorithm", sort=True)["n_variants"].max()
    said = one_checkpoint_sentence(str(name) for name, n in counts.items() if int(n) == 1)
    return [*([] if aggregate_only else [INTERVAL_NOTE]), *([said] if said else [])]
