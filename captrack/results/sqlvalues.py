"""SQL fragments of the store's ingest: a logged metric value as a stored number, and quoting."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["proportions_of", "quote_ident", "quote_literal", "value_sql"]

# A logged metric value as a number: bools and numeric strings too; NULL where it is not a number
# (null, or an array/object a corpus-level metric logs). Such items are stored as NaN (unscored).
_NUMBER = """CASE json_type({col})
    WHEN 'BOOLEAN' THEN CASE WHEN {col}::BOOLEAN THEN 1.0 ELSE 0.0 END
    WHEN 'VARCHAR' THEN CASE lower({col} ->> '$') WHEN 'true' THEN 1.0 WHEN 'false' THEN 0.0
        ELSE TRY_CAST({col} ->> '$' AS DOUBLE) END
    WHEN 'NULL' THEN NULL WHEN 'ARRAY' THEN NULL WHEN 'OBJECT' THEN NULL
    ELSE {col}::DOUBLE END"""
# A non-finite number (NaN, Infinity) or, for a proportion, one outside [0, 1] stops the ingest; the
# samples file is then scanned for the line to name (runfiles.first_bad_line).
_VALUE = "CASE WHEN NOT isfinite({n}){range} THEN error('captrack: refused value') ELSE coalesce({n}, 'nan'::DOUBLE) END"
_RANGE = " OR {n} < 0 OR {n} > 1"


def value_sql(metric: str, proportion: bool) -> str:
    """The stored value of one logged metric column, refusing what ingest must not accept."""
    number = "(" + _NUMBER.format(col=quote_ident(metric)) + ")"
    return _VALUE.format(n=number, range=_RANGE.format(n=number) if proportion else "")


def proportions_of(metrics: Sequence[str]) -> dict[str, bool]:
    """Metric -> whether its values must lie in [0, 1] (MetricSpec kind binary or score; unknown: not checked)."""
    from captrack.errors import UnknownNameError
    from captrack.metrics.registry import get_metric

    out = {}
    for metric in metrics:
        try:
            out[metric] = get_metric(metric).kind in ("binary", "score")
        except UnknownNameError:
            out[metric] = False
    return out


def quote_ident(name: str) -> str:
    """An SQL identifier in double quotes."""
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    """An SQL string literal in single quotes."""
    return "'" + text.replace("'", "''") + "'"
