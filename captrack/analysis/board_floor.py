"""A board's backend A/A floor: the pair of the base evaluated twice by its own backend, apart only in batch size
(algorithm ``floor``, captrack.pipeline.floor), read as a reference beside the variants, never as one of them.

The floor's forgetting and backward transfer on a task are the shares of items its two runs flip 1→0 and 0→1: what the
backend's nondeterminism alone does to the same weights. A variant's change on a task (metric) is *within the A/A
floor* when it forgets no larger a share of items and gains no larger a share than the floor of its base's backend on
that task and metric: as few flips as the backend makes on its own, so nothing of that change can be told from
batching. A floor belongs to the base its pair measures (captrack.labels.floor_measures): the base itself where its own
run is the pair's first, else the base whose floor evaluation is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from captrack.labels import FLOOR_ALGORITHM, floor_measures

__all__ = ["AGAINST_FLOOR_COLUMNS", "FLOOR_COLUMNS", "BoardFloor", "board_floor", "floor_names"]

FLOOR_COLUMNS = ["floor", "measures", "task", "metric", "n", "n_10", "n_01", "forgetting", "backward_transfer"]
"""The floor's own rows: its transitions.csv row per task and metric, and the base whose backend it measures."""
AGAINST_FLOOR_COLUMNS = ["variant", "base", "task", "metric", "n", "forgetting", "backward_transfer", "aa_floor",
                         "aa_floor_n", "aa_floor_forgetting", "aa_floor_backward_transfer", "within_aa_floor"]
"""floor.csv: each variant's F and BT per task and metric beside its base's floor, and whether it is within it."""
_TOLERANCE = 1e-12  # shares k/n computed alike compare equal


@dataclass(frozen=True)
class BoardFloor:
    """A board's floors: their names, their own rows, and each variant's rows read against its base's floor."""

    names: list[str] = field(default_factory=list)
    rows: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=FLOOR_COLUMNS))
    against: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=AGAINST_FLOOR_COLUMNS))


def floor_names(labels: pd.DataFrame) -> list[str]:
    """The board's floor pairs (algorithm ``floor``) among `labels` (variant, label_algorithm), in its order."""
    if labels.empty:
        return []
    return [str(v) for v, a in zip(labels["variant"], labels["label_algorithm"], strict=True) if a == FLOOR_ALGORITHM]


def board_floor(transitions: pd.DataFrame, labels: pd.DataFrame) -> BoardFloor:
    """The floors of a board (`labels`: variant, base, label_algorithm; `transitions`: every pair's rows) and each
    other variant's rows against the floor of its base (none for a variant whose base has no floor)."""
    names = floor_names(labels)
    if not names:
        return BoardFloor()
    bases = {str(v): str(b) for v, b in zip(labels["variant"], labels["base"], strict=True)}
    first = transitions.drop_duplicates(["variant", "task", "metric"])
    own = first[first["variant"].astype(str).isin(names)]
    rows = own.assign(floor=own["variant"].astype(str), measures=[floor_measures(bases[str(v)]) for v in own["variant"]])
    rows = rows[FLOOR_COLUMNS].sort_values(["measures", "floor", "task", "metric"]).reset_index(drop=True)
    theirs = first[~first["variant"].astype(str).isin(names)]
    theirs = theirs.assign(base=[bases.get(str(v), "") for v in theirs["variant"]])
    floors = rows.rename(columns={"floor": "aa_floor", "measures": "base", "n": "aa_floor_n",
                                  "forgetting": "aa_floor_forgetting", "backward_transfer": "aa_floor_backward_transfer"})
    floors = floors.drop(columns=["n_10", "n_01"])
    against = theirs[["variant", "base", "task", "metric", "n", "forgetting", "backward_transfer"]].merge(
        floors, on=["base", "task", "metric"], how="inner")
    within = ((against["forgetting"].to_numpy(dtype=float)
               <= against["aa_floor_forgetting"].to_numpy(dtype=float) + _TOLERANCE)
              & (against["backward_transfer"].to_numpy(dtype=float)
                 <= against["aa_floor_backward_transfer"].to_numpy(dtype=float) + _TOLERANCE))
    against = against.assign(within_aa_floor=np.asarray(within, dtype=bool))[AGAINST_FLOOR_COLUMNS]
    return BoardFloor(names, rows, against.sort_values(["variant", "task", "metric", "aa_floor"]).reset_index(drop=True))
