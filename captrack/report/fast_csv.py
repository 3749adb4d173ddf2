"""CSV text of big tables, column by column: the bytes pandas' ``to_csv(index=False, float_format="%.10g")``
writes after captrack.report.escape.inert_cell, produced in chunks (bounded memory) and many times faster.

Each column gives a printf-style field per row (``%.10g`` for a float, ``"[%s, %s]"`` for a list of two
floats written as ``repr`` writes them, ``%s`` for text already made a CSV cell) and the values it takes; a chunk
of rows is then one ``%`` of the repeated row format over the chunk's values, so every number is written by
Python's own formatting (or, for the lists' floats, Arrow's where it is the same text: `_reprs`), in C, without a
Python call per cell.

Only tables whose columns are float, integer or bool arrays, or objects holding text, lists or missing
values are written this way (`csv_chunks` returns None for anything else; `csv_text` then uses pandas).
tests/report/test_fast_csv.py checks the bytes against pandas.

`write_csv_rows` is what a child process runs to write the rows of a table's parts kept on disk
(captrack.analysis.item_spool.SpooledParts) while its caller analyses (captrack.report.items_ahead) or writes the
first ones (captrack.report.writer): it imports no more than this module needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from captrack.analysis.item_spool import SpooledParts
from captrack.report.escape import inert_cell

__all__ = ["csv_chunks", "csv_text", "write_csv_rows"]

_CHUNK = 50_000
_SPECIAL = (",", '"', "\n", "\r")
_NEEDS_WORK = r'^[=+\-@\t\r]|[,"\n\r]'  # a cell inert_cell or quoting changes (see _quoted, escape._FORMULA_START)

Fields = tuple[str, np.ndarray]
"""A column's printf field for one row, and its values: an (n, m) array, m values per row."""
Column = Callable[[Any], Fields]


def _quoted(text: str) -> str:
    """A field as csv.writer's QUOTE_MINIMAL writes it."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in _SPECIAL) else text


def _cells(cells: list[str] | np.ndarray) -> Fields:
    """Cells already written as text."""
    return "%s", np.asarray(cells, dtype=object).reshape(-1, 1)


def _object_cell(value: object, seen: dict[str, str]) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, str):
        found = seen.get(value)
        if found is None:
            found = seen[value] = _quoted(str(inert_cell(value)))
        return found
    return _quoted(str(value))


def _texts(chunk: np.ndarray) -> Fields:
    """Text cells (missing ones empty): the distinct values a spreadsheet or the CSV quoting would change (found
    by one regular expression over all of them) made inert and quoted, the others written as they are."""
    codes, uniques = pd.factorize(chunk, use_na_sentinel=True)
    fields = np.append(np.asarray(uniques, dtype=object), "")
    if len(uniques):
        work = np.flatnonzero(pc.match_substring_regex(pa.array(uniques, pa.string()), _NEEDS_WORK).to_numpy(zero_copy_only=False))
        fields[work] = [_quoted(str(inert_cell(fields[i]))) for i in work.tolist()]
    return _cells(fields[codes])


def _float_lists(chunk: pd.api.extensions.ExtensionArray) -> Fields:
    """Cells of an Arrow list<double> column as Python writes a list of floats ("[0.25, 0.75]"); missing: empty."""
    lists = pa.chunked_array(chunk._pa_array).combine_chunks() if hasattr(chunk, "_pa_array") else pa.array(chunk)
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)
    if len(lists) and not lists.null_count and (lengths == lengths[0]).all():  # every row as long: one field
        width = int(lengths[0])
        field = "[" + ", ".join(["%s"] * width) + "]"  # repr of each float: what str(list) writes
        return ('"' + field + '"' if width > 1 else field), _reprs(values[int(offsets[0]):int(offsets[-1])]).reshape(len(lists), width)
    flat = values.tolist()
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    return _cells([_quoted(str(flat[a:b])) if ok else ""
                   for a, b, ok in zip(offsets[:-1].tolist(), offsets[1:].tolist(), valid.tolist(), strict=True)])


def _reprs(values: np.ndarray) -> np.ndarray:
    """``repr`` of each float (an object array of text): Arrow's shortest round-trip text where it is Python's own
    (finite values from 1e-4 to 1e9 in size, not whole numbers: there both write the same shortest digits in positional
    notation, tests/report/test_fast_csv.py checks it), ``repr`` for the rest. Twice as fast as ``%r`` per value."""
    flat = np.asarray(values, dtype=np.float64).ravel()
    text = pc.cast(pa.array(flat), pa.string()).to_numpy(zero_copy_only=False)
    size = np.abs(flat)
    with np.errstate(invalid="ignore"):
        odd = np.flatnonzero(~((size >= 1e-4) & (size < 1e9)) | (flat == np.floor(flat)))
    text[odd] = [repr(value) for value in flat[odd].tolist()]
    return text


def _floats(values: np.ndarray) -> Fields:
    """Floats as pandas writes them with float_format="%.10g" (it applies the format with %); NaN empty."""
    missing = np.isnan(values)
    if not missing.any():
        return "%.10g", values.astype(np.float64, copy=False).reshape(-1, 1)
    out = list(map("%.10g".__mod__, values.tolist()))
    for i in np.flatnonzero(missing).tolist():
        out[i] = ""
    return _cells(out)


def _formatter(series: pd.Series) -> Column | None:
    """A function from a slice of the column's values to its fields, or None if this dtype is not handled."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype == np.bool_:
        return lambda values: _cells(np.where(values, "True", "False"))
    if dtype.kind in "iu" and isinstance(dtype, np.dtype):
        return lambda values: ("%d", values.reshape(-1, 1))
    if dtype.kind == "f" and isinstance(dtype, np.dtype):
        return _floats
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_list(dtype.pyarrow_dtype) and pa.types.is_floating(
            dtype.pyarrow_dtype.value_type):
        return _float_lists
    if dtype.kind == "O":  # object, or pandas' text dtype
        values = series.to_numpy()
        if pd.api.types.infer_dtype(values, skipna=True) in ("string", "empty"):  # text and missing values only
            return _texts
        if all(isinstance(v, list) for v in values):
            return lambda chunk: _cells([_quoted(str(v)) for v in chunk.tolist()])
        if not all(isinstance(v, (str, list)) or v is None or (isinstance(v, float) and v != v) for v in values):
            return None
        seen: dict[str, str] = {}
        return lambda chunk: _cells([_object_cell(v, seen) for v in chunk.tolist()])
    return None


def _rows(columns: list[Fields]) -> str:
    """The CSV lines of a chunk: its row format repeated once per row, applied to every value at once."""
    n = len(columns[0][1])
    table = np.empty((n, sum(values.shape[1] for _, values in columns)), dtype=object)
    at = 0
    for _, values in columns:
        table[:, at:at + values.shape[1]] = values
        at += values.shape[1]
    row = ",".join(field for field, _ in columns) + "\n"
    return (row * n) % tuple(table.ravel().tolist())


def csv_chunks(frame: pd.DataFrame) -> Iterator[str] | None:
    """The CSV text of `frame` (header first) in chunks of rows, or None when a column's dtype is not handled."""
    if frame.shape[1] < 2 or frame.columns.duplicated().any():
        return None
    formatters = [_formatter(frame.iloc[:, i]) for i in range(frame.shape[1])]
    if any(f is None for f in formatters) or not all(isinstance(c, str) for c in frame.columns):
        return None
    arrays = [frame.iloc[:, i].array if isinstance(frame.dtypes.iloc[i], pd.ArrowDtype) else frame.iloc[:, i].to_numpy()
              for i in range(frame.shape[1])]

    def chunks() -> Iterator[str]:
        yield ",".join(_quoted(str(inert_cell(c))) for c in frame.columns) + "\n"
        for start in range(0, len(frame), _CHUNK):
            yield _rows([f(a[start:start + _CHUNK]) for f, a in zip(formatters, arrays, strict=True)])  # type: ignore[misc]

    return chunks()


def csv_text(parts: Iterable[pd.DataFrame], header: bool = True) -> Iterator[str]:
    """The CSV text of a table given as parts with the same columns: the header once (unless not `header`), then
    every part's rows; every text cell and header made inert (captrack.report.escape.inert_cell), floats written
    with "%.10g": `csv_chunks` where it takes the part, else pandas' to_csv."""
    first = header
    for frame in parts:
        chunks = csv_chunks(frame)
        if chunks is None:
            texts = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
            shown = frame.assign(**{c: frame[c].map(inert_cell) for c in texts}) if texts else frame
            shown = shown.rename(columns=lambda c: inert_cell(c))
            chunks = iter([shown.to_csv(index=False, header=first, float_format="%.10g")])
        elif not first:
            next(chunks)  # the header, written with the first part
        yield from chunks
        first = False


def write_csv_rows(parts: SpooledParts, out: Path, header: bool = False, append: bool = False) -> None:
    """Write the CSV rows of `parts` (the header first only with `header`) to `out` (after what it holds, with
    `append`), as `csv_text` writes them."""
    with out.open("a" if append else "w", encoding="utf-8", newline="") as handle:
        for chunk in csv_text(parts.frames(), header=header):
            handle.write(chunk)
