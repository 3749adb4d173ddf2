"""captrack.report.fast_csv writes the very bytes pandas' to_csv writes (after inert_cell), for every column kind it takes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from captrack.report.escape import inert_cell
from captrack.report.fast_csv import csv_chunks


def _pandas(frame: pd.DataFrame) -> str:
    texts = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    shown = frame.assign(**{c: frame[c].map(inert_cell) for c in texts}).rename(columns=lambda c: inert_cell(c))
    return shown.to_csv(index=False, float_format="%.10g")


def test_the_same_bytes_as_pandas_on_every_kind_of_column() -> None:
    rng = np.random.default_rng(7)
    n = 120_003  # more than one chunk
    floats = rng.normal(size=n) * 10.0 ** rng.integers(-12, 14, size=n)
    floats[rng.random(n) < 0.05] = np.nan
    floats[:6] = [np.inf, -np.inf, 0.0, -0.0, 1e16, 123456789012.5]
    words = np.array(["plain", "=SUM(A1)", "-neg", "with, comma", 'a "quote"', "line\nbreak", "", "+1", "@x", "tab\tx"])
    lists = [[float(x) for x in rng.random(4)] for _ in range(n)]
    lists[3] = [1e-05, 0.0001, 1.0, 3.476756378969905e-05]
    frame = pd.DataFrame({
        "variant": words[rng.integers(0, len(words), size=n)], "gold": rng.integers(-3, 10, size=n),
        "probs": lists, "value": floats, "small": rng.random(n).astype(np.float32),
        "flag": rng.random(n) < 0.5, "kind": np.where(rng.random(n) < 0.3, "collapse", ""),
        "maybe": [None if i % 7 == 0 else "x" for i in range(n)], "-odd name": rng.random(n),
    })
    chunks = csv_chunks(frame)
    assert chunks is not None
    assert "".join(chunks) == _pandas(frame)
    # Probabilities held as an Arrow list<double> column are written as the Python lists would be.
    arrow = frame.assign(probs=pd.Series(pd.arrays.ArrowExtensionArray(pa.array(lists))))
    assert "".join(csv_chunks(arrow) or []) == _pandas(frame)


def test_columns_it_does_not_know_go_to_pandas() -> None:
    frame = pd.DataFrame({"k": pd.array([1, None], dtype="Int64"), "x": [1.0, 2.0]})
    assert csv_chunks(frame) is None
    assert csv_chunks(pd.DataFrame({"a": ["x", {"d": 1}], "b": [1, 2]})) is None


TRICKY = [1.0, 100.0, 0.1, 1e-05, 0.0001, 9.999999999999999e-05, 1e16, 1e15, 1234567890123456.8, 1.2345678901234568e+16,
          5e-324, 2.2250738585072014e-308, 1.7976931348623157e+308, -0.0, 0.0, 1 / 3, 0.30000000000000004, 1e22,
          float("inf"), float("-inf"), float("nan"), 123456789.5, 1.5e-7, 0.49999999999999994]


def test_numbers_are_written_as_python_writes_them_on_tricky_floats() -> None:
    """Each float in a list is its repr (str of the list), each float cell "%.10g" % value: the row format does not
    round differently anywhere, including subnormals, huge values, signed zeros, inf and NaN."""
    rng = np.random.default_rng(3)
    random_bits = rng.integers(0, 2**63, size=4000, dtype=np.int64).view(np.float64)
    values = np.concatenate([TRICKY, random_bits[np.isfinite(random_bits)], rng.random(4000) * 10.0 ** rng.integers(-30, 30, 4000)])
    n = len(values) // 4 * 4
    rows = values[:n].reshape(-1, 4)
    frame = pd.DataFrame({
        "four": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows.tolist()))),
        "one": pd.Series(pd.arrays.ArrowExtensionArray(pa.array(rows[:, :1].tolist()))),
        "x": rows[:, 0], "y": np.where(np.isnan(rows[:, 1]), 0.5, rows[:, 1]),
    })
    text = "".join(csv_chunks(frame) or [])
    expected = _pandas(frame.assign(four=[list(r) for r in rows.tolist()], one=[[r[0]] for r in rows.tolist()]))
    assert text == expected
    first = text.splitlines()[1]
    assert first == '"[1.0, 100.0, 0.1, 1e-05]",[1.0],1,100'


def test_floats_in_lists_are_their_repr_over_every_magnitude() -> None:
    """`_reprs` takes Arrow's text only where it is repr's (1e-4 to 1e9, not whole numbers); checked on values of every
    size from 1e-8 to 1e18, near the range's edges, probabilities and random bit patterns."""
    from captrack.report.fast_csv import _reprs

    rng = np.random.default_rng(11)
    edges = np.array([1e-4, 1e9, 1e10, 1e15, 1e16])
    near = np.concatenate([np.nextafter(edges, 0), edges, np.nextafter(edges, np.inf)])
    values = np.concatenate([
        TRICKY, near, -near, rng.dirichlet([0.3] * 4, 50_000).ravel(), rng.random(200_000),
        10.0 ** rng.uniform(-8, 18, 400_000) * rng.choice([-1.0, 1.0], 400_000),
        np.round(rng.uniform(-1e6, 1e6, 20_000)) / 8, rng.integers(0, 2**63, size=100_000, dtype=np.int64).view(np.float64)])
    assert _reprs(values).tolist() == [repr(v) for v in values.tolist()]
