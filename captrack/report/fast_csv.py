"""CSV text of big tables, column by column: the bytes pandas' ``to_csv(index=False, float_format="%.10g")``
writes after captrack.report.escape.inert_cell, produced in chunks (bounded memory) and many times faster.

Only tables whose columns are float, integer or bool arrays, or objects holding text, lists or missing
values are written this way (`csv_chunks` returns None for anything else; the caller then uses pandas).
tests/report/test_fast_csv.py checks the bytes against pandas.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa

from captrack.report.escape import inert_cell

__all__ = ["csv_chunks"]

_CHUNK = 50_000
_SPECIAL = (",", '"', "\n", "\r")


def _quoted(text: str) -> str:
    """A field as csv.writer's QUOTE_MINIMAL writes it."""
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in _SPECIAL) else text


def _object_cell(value: object, seen: dict[str, str]) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return ""
    if isinstance(value, str):
        found = seen.get(value)
        if found is None:
            found = seen[value] = _quoted(str(inert_cell(value)))
        return found
    return _quoted(str(value))


def _texts(chunk: np.ndarray) -> list[str]:
    """Text cells (missing ones empty), each distinct value made inert and quoted once."""
    codes, uniques = pd.factorize(chunk, use_na_sentinel=True)
    fields = np.array([_quoted(str(inert_cell(u))) for u in uniques] + [""], dtype=object)
    return list(fields[codes])


def _float_lists(chunk: pd.api.extensions.ExtensionArray) -> list[str]:
    """Cells of an Arrow list<double> column as Python writes a list of floats ("[0.25, 0.75]"); missing: empty."""
    lists = pa.chunked_array(chunk._pa_array).combine_chunks() if hasattr(chunk, "_pa_array") else pa.array(chunk)
    offsets = lists.offsets.to_numpy()
    values = lists.values.to_numpy(zero_copy_only=False)
    lengths = np.diff(offsets)
    if len(lists) and not lists.null_count and (lengths == lengths[0]).all():  # every row as long: one reshape
        width = int(lengths[0])
        rows = values[int(offsets[0]):int(offsets[-1])].reshape(len(lists), width).tolist()
        return list(map('"{}"'.format if width > 1 else str, rows))  # str(list) writes each float's repr
    flat = values.tolist()
    valid = lists.is_valid().to_numpy(zero_copy_only=False)
    return [_quoted(str(flat[a:b])) if ok else ""
            for a, b, ok in zip(offsets[:-1].tolist(), offsets[1:].tolist(), valid.tolist(), strict=True)]


def _formatter(series: pd.Series) -> object | None:
    """A function from a slice of the column's values to its CSV fields, or None if this dtype is not handled."""
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype == np.bool_:
        return lambda values: np.where(values, "True", "False").tolist()
    if dtype.kind in "iu" and isinstance(dtype, np.dtype):
        return lambda values: list(map(str, values.tolist()))
    if dtype.kind == "f" and isinstance(dtype, np.dtype):
        def floats(values: np.ndarray) -> list[str]:
            out = list(map("%.10g".__mod__, values.tolist()))  # pandas applies its float_format with %
            if np.isnan(values).any():
                for i in np.flatnonzero(np.isnan(values)).tolist():
                    out[i] = ""
            return out
        return floats
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_list(dtype.pyarrow_dtype) and pa.types.is_floating(
            dtype.pyarrow_dtype.value_type):
        return _float_lists
    if dtype.kind == "O":  # object, or pandas' text dtype
        values = series.to_numpy()
        if all(isinstance(v, str) or v is None or (isinstance(v, float) and v != v) for v in values):
            return _texts
        if all(isinstance(v, list) for v in values):
            return lambda chunk: [_quoted(str(v)) for v in chunk.tolist()]
        if not all(isinstance(v, (str, list)) or v is None or (isinstance(v, float) and v != v) for v in values):
            return None
        seen: dict[str, str] = {}
        return lambda chunk: [_object_cell(v, seen) for v in chunk.tolist()]
    return None


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
            columns = [f(a[start:start + _CHUNK]) for f, a in zip(formatters, arrays, strict=True)]  # type: ignore[operator]
            yield "\n".join(map(",".join, zip(*columns, strict=True))) + "\n"

    return chunks()
