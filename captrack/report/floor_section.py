"""A board's backend A/A floor, drawn beside its variants (captrack.analysis.board_floor): the floor's flips per task
and each variant's F and BT next to them, a variant's change within the floor marked as such.

The floor is a reference, not a variant: the index's grid, checkpoints, per-capability and per-task tables, findings
and figures show the variants only (:func:`variant_frames`), while the board's transitions.csv, drift.csv,
capabilities.csv and power.csv keep the floor's rows (algorithm ``floor``) and floor.csv holds the variants against it.
A board without a floor has no such section and no floor.csv: its files are as they were.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from captrack.report.escape import md_text
from captrack.report.html import esc, table
from captrack.report.numbers import missing, plain

if TYPE_CHECKING:
    from captrack.analysis.board_floor import BoardFloor

__all__ = [
    "BEYOND",
    "FLOOR_FILE",
    "FLOOR_NOTE",
    "WITHIN",
    "floor_html",
    "floor_mark",
    "floor_markdown",
    "floor_tables",
    "variant_frames",
    "within_floor",
]

FLOOR_FILE = "floor.csv"
WITHIN = "within the A/A floor"
BEYOND = "beyond the A/A floor"
FLOOR_NOTE = ("The backend's A/A floor: the base evaluated twice by its own backend, apart only in batch size (an "
              "experiment's floor:). The items its two runs flip are what the backend's nondeterminism alone flips: F, "
              "the share that goes 1→0, and BT, the share that goes 0→1. It is a reference, not a variant: not ranked, "
              "not in the algorithm summary, the checkpoints or the grid, not gated. A variant's change on a task is "
              f"{WITHIN} when it forgets no larger a share of items and gains no larger a share than the floor of its "
              "base's backend on that task: no more flips than batching alone makes.")
_FLOOR_HEADER = ["A/A floor", "backend of base", "task", "metric", "items", "items 1→0", "items 0→1", "F", "BT"]
_AGAINST_HEADER = ["variant", "base", "task", "metric", "items", "F", "BT", "floor F", "floor BT", "against the floor"]


def variant_frames(frames: dict[str, pd.DataFrame], floors: list[str]) -> dict[str, pd.DataFrame]:
    """`frames` without the floor pairs' rows (`floors`), for what shows variants; `frames` itself without a floor."""
    if not floors:
        return frames
    return {name: frame[~frame["variant"].isin(floors)] if "variant" in frame.columns else frame
            for name, frame in frames.items()}


def within_floor(floor: BoardFloor) -> frozenset[tuple[str, str, str]]:
    """The (variant, task, metric) whose F and BT are within their base's floor."""
    rows = floor.against[floor.against["within_aa_floor"].astype(bool)]
    return frozenset(zip(rows["variant"].astype(str), rows["task"].astype(str), rows["metric"].astype(str), strict=True))


def floor_mark(within: frozenset[tuple[str, str, str]], variant: object, task: object, metric: object) -> str:
    """What a per-task row adds to its hint: `` · within the A/A floor`` where it is, else nothing."""
    return f" · {WITHIN}" if (str(variant), str(task), str(metric)) in within else ""


def floor_tables(folder: Path, floor: BoardFloor) -> dict[str, pd.DataFrame]:
    """floor.csv (each variant beside its base's floor) where the board has a floor; nothing otherwise, and a floor.csv
    of an earlier build of the board in `folder` removed (it would read as this board's)."""
    if floor.names:
        return {FLOOR_FILE: floor.against}
    (folder / FLOOR_FILE).unlink(missing_ok=True)
    return {}


def _share(value: object) -> str:
    """A share as a percentage cell, its exact value kept for sorting."""
    if missing(value):
        return '<td class="num" data-sort="">n/a</td>'
    number = float(str(value))
    return f'<td class="num" data-sort="{number!r}">{esc(plain(100 * number, suffix="%"))}</td>'


def _count(value: object) -> str:
    return '<td class="num">n/a</td>' if missing(value) else f'<td class="num">{int(float(str(value)))}</td>'


def _verdict(row: dict[str, object]) -> str:
    if missing(row["forgetting"]) or missing(row["backward_transfer"]):
        return "n/a (no flips counted)"
    return WITHIN if bool(row["within_aa_floor"]) else BEYOND


def floor_html(floor: BoardFloor) -> str:
    """The index's floor section ("" without a floor)."""
    if not floor.names:
        return ""
    own = [[f"<td>{esc(r['floor'])}</td>", f"<td>{esc(r['measures'])}</td>", f"<td>{esc(r['task'])}</td>",
            f"<td>{esc(r['metric'])}</td>", *(_count(r[k]) for k in ("n", "n_10", "n_01")),
            _share(r["forgetting"]), _share(r["backward_transfer"])] for r in floor.rows.to_dict("records")]
    theirs = [[*(f"<td>{esc(r[k])}</td>" for k in ("variant", "base", "task", "metric")), _count(r["n"]),
               *(_share(r[k]) for k in ("forgetting", "backward_transfer", "aa_floor_forgetting",
                                        "aa_floor_backward_transfer")),
               f'<td class="floor-verdict">{esc(_verdict(r))}</td>'] for r in floor.against.to_dict("records")]
    return ('<h2 id="floor">Backend A/A floor: what the backend alone flips</h2>'
            f'<p class="muted" id="floor-note">{esc(FLOOR_NOTE)}</p>' + table(_FLOOR_HEADER, own, "floor-table")
            + '<h3 id="floor-variants">Each variant beside its base\'s floor, per task</h3>'
            + table(_AGAINST_HEADER, theirs, "floor-variants-table") + f'<p class="muted">Data: {FLOOR_FILE}.</p>')


def _pct(value: object) -> str:
    return "n/a" if missing(value) else plain(100 * float(str(value)), suffix="%")


def floor_markdown(floor: BoardFloor) -> list[str]:
    """The README's floor section (no lines without a floor)."""
    if not floor.names:
        return []
    lines = ["## Backend A/A floor: what the backend alone flips", "", md_text(FLOOR_NOTE, table=False), "",
             "| " + " | ".join(_FLOOR_HEADER) + " |", "|---" * len(_FLOOR_HEADER) + "|"]
    lines += ["| " + " | ".join([*(md_text(r[k]) for k in ("floor", "measures", "task", "metric")),
                                 *(str(int(r[k])) for k in ("n", "n_10", "n_01")),
                                 _pct(r["forgetting"]), _pct(r["backward_transfer"])]) + " |"
              for r in floor.rows.to_dict("records")]
    lines += ["", "| " + " | ".join(_AGAINST_HEADER) + " |", "|---" * len(_AGAINST_HEADER) + "|"]
    lines += ["| " + " | ".join([*(md_text(r[k]) for k in ("variant", "base", "task", "metric")),
                                 "n/a" if missing(r["n"]) else str(int(r["n"])),
                                 *(_pct(r[k]) for k in ("forgetting", "backward_transfer", "aa_floor_forgetting",
                                                        "aa_floor_backward_transfer")), _verdict(r)]) + " |"
              for r in floor.against.to_dict("records")]
    return [*lines, ""]
