"""A comparison or board folder read for the gate: its tables, column by column and value by value.

The gate decides from the cells of capabilities.csv and drift.csv (oriented change, 95% and 90% CIs, verdict,
p-value) and shows the flips of transitions.csv. A folder it cannot read in full is refused (exit 1, nothing
decided) rather than read as rules without a verdict, which would pass: a table without a column the gate needs
(a folder written by an older captrack: verdicts came on 2026-11-25, p-values on 2026-11-27), or a cell it cannot
parse (``REGRESSED``, a p-value exported as text ``<0.001``). An empty cell is no value (aggregate scores).
Every file is read with a size bound (captrack.bounded), so a table that is a FIFO or ``/dev/zero`` ends in one line.
"""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pandas as pd

from captrack.analysis.verdicts import VERDICTS
from captrack.bounded import MAX_DATA_BYTES, load_json, read_bytes
from captrack.errors import InputError

__all__ = ["GATE_COLUMNS", "read_tables"]

_CELL = ("oriented_change", "change_ci_low", "change_ci_high", "change_ci90_low", "change_ci90_high", "verdict", "p_value")
GATE_COLUMNS = {
    "capabilities.csv": ("variant", "level", "key", "base_value", "variant_value", *_CELL),
    "drift.csv": ("variant", "task", "metric", "direction", "base_value", "variant_value", "change_unit", *_CELL),
    "transitions.csv": ("variant", "task", "metric", "capability", "group", "n", "n_10", "n_01"),
}
"""The columns the gate reads from each table of a comparison or board folder."""
_KEYS = {"capabilities.csv": ("variant", "level", "key"), "drift.csv": ("variant", "task", "metric"),
         "transitions.csv": ("variant", "task", "metric", "capability", "group")}
_NUMBERS = ("base_value", "variant_value", "oriented_change", "change_ci_low", "change_ci_high", "change_ci90_low", "change_ci90_high",
            "p_value")
_COUNTS = ("n", "n_10", "n_01")
_ALLOWED = {"verdict": ("", *VERDICTS), "direction": ("higher", "lower", "neutral"),
            "change_unit": ("", "points", "% of base"), "level": ("capability", "group")}
# When captrack first wrote the columns the gate needs (a folder without them comes from before that commit).
_FIRST_WRITTEN = {"p_value": ("d31ca71", "2026-11-27"), **{c: ("c1cc661", "2026-11-25") for c in _CELL if c != "p_value"},
                  "change_unit": ("c1cc661", "2026-11-25")}


def read_tables(folder: str | Path) -> tuple[Any, Any, Any]:
    """(capabilities, drift, transitions) of a comparison or board folder; transitions None where absent.

    Raises:
        InputError: the folder is missing or has neither capabilities.csv nor drift.csv; a table is unreadable,
            too large, lacks a column the gate needs (naming the captrack that wrote it) or holds a value the gate
            cannot parse (file, line, column and value named). Nothing is decided.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder}: no such folder; give the --out folder of `captrack compare` or a board folder")
    tables = {name: _table(folder, name) for name in GATE_COLUMNS}
    if tables["capabilities.csv"] is None and tables["drift.csv"] is None:
        raise InputError(f"{folder}: holds neither capabilities.csv nor drift.csv; give the --out folder of "
                         "`captrack compare` or a board folder")
    return tables["capabilities.csv"], tables["drift.csv"], tables["transitions.csv"]


def _table(folder: Path, name: str) -> pd.DataFrame | None:
    path = folder / name
    if not path.exists():
        return None
    try:
        raw = read_bytes(path, MAX_DATA_BYTES)
        table = pd.read_csv(io.BytesIO(raw), keep_default_na=False, na_values=[""], dtype=dict.fromkeys(_KEYS[name], str))
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{path}: cannot read it as a captrack table ({why}); nothing was decided") from None
    lacking = [c for c in GATE_COLUMNS[name] if c not in table.columns]
    if lacking:
        raise InputError(_lacking(folder, path, name, lacking))
    for column in _NUMBERS:
        if column in GATE_COLUMNS[name]:
            table[column] = _numbers(path, table, column)
    for column in _COUNTS:
        if column in GATE_COLUMNS[name]:
            _counts(path, table, column)
    for column, allowed in _ALLOWED.items():
        if column in GATE_COLUMNS[name]:
            _words(path, table, column, allowed)
    return table


def _lacking(folder: Path, path: Path, name: str, lacking: list[str]) -> str:
    columns = ", ".join(repr(c) for c in lacking)
    known = sorted((_FIRST_WRITTEN[c][1], _FIRST_WRITTEN[c][0], c) for c in lacking if c in _FIRST_WRITTEN)
    if not known:
        return f"{path}: no column {columns}; is it a captrack comparison's {name}? (nothing was decided)"
    date, commit, first = known[0]  # the folder predates the earliest of them
    return (f"{path}: no column {columns}, which the gate decides from: this folder was written by an older captrack "
            f"({_version(folder)}; from before {date}, when commit {commit} first wrote {first!r}); compare again "
            "(or rebuild the board) with this captrack, then gate that folder (nothing was decided)")


def _version(folder: Path) -> str:
    """What the folder says of the captrack that wrote it (its manifest or summary.json), or that it says nothing."""
    for file in (".captrack-manifest.json", "summary.json"):
        try:
            record = load_json(read_bytes(folder / file, MAX_DATA_BYTES))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("captrack_version"):
            return f"captrack {str(record['captrack_version'])[:40]}, as its {file} says"
    return "one that recorded no version"


def _refuse(path: Path, table: pd.DataFrame, row: Any, column: str, what: str) -> InputError:
    value = str(table.at[row, column])
    shown = value if len(value) <= 40 else value[:40] + "…"
    line = int(table.index.get_loc(row)) + 2  # the header is line 1
    return InputError(f"{path}: line {line}, column '{column}': {shown!r} is not {what}; was the table edited or "
                      "exported by another program? compare again with captrack (nothing was decided)")


def _numbers(path: Path, table: pd.DataFrame, column: str) -> pd.Series:
    """The column as floats (an empty cell: NaN); a cell that is no number, or a p-value outside [0, 1], is refused."""
    values = table[column]
    if pd.api.types.is_bool_dtype(values):  # True/False: words, not numbers
        values = values.astype(str)
    if not pd.api.types.is_numeric_dtype(values):
        parsed = pd.to_numeric(values, errors="coerce")
        bad = values.notna() & parsed.isna() & ~values.astype(str).str.strip().str.lower().isin(["nan"])
        if bad.any():
            raise _refuse(path, table, values.index[bad.to_numpy()][0], column, "a number")
        values = parsed
    values = values.astype(float)
    if column == "p_value":
        outside = values.notna() & ~values.between(0.0, 1.0)
        if outside.any():
            raise _refuse(path, table, values.index[outside.to_numpy()][0], column, "a p-value in [0, 1]")
    return values


def _counts(path: Path, table: pd.DataFrame, column: str) -> None:
    for row, value in table[column].items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0 or number != int(number):
            raise _refuse(path, table, row, column, "a count (a whole number of items)")


def _words(path: Path, table: pd.DataFrame, column: str, allowed: tuple[str, ...]) -> None:
    found = table[column].map(lambda v: "" if pd.isna(v) else str(v))
    bad = ~found.isin(allowed)
    if bad.any():
        shown = ", ".join(repr(a) for a in allowed if a) + (" or empty" if "" in allowed else "")
        raise _refuse(path, table, found.index[bad.to_numpy()][0], column, f"one of {shown}")
