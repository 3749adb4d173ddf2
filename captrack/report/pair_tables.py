"""Leaderboard tables per base → variant pair and per document field (HTML and Markdown).

``pairs.csv``: one row per (variant, task, metric) with transitions: accuracy before and after, the
change with its CI and verdict, n11/n10/n01/n00, F, BT, k, F_adj, BT_adj, McNemar p and q
(the counts, rates and q-values are transitions.csv's). ``by_<field>.csv``: the same per value of a
doc field (`by:` in leaderboard.yaml), from captrack.analysis.by_field.

On the pages, a pair's change is the verdict's (drift.csv's oriented_change with its 95% CI and verdict),
as everywhere else on the board; a field value's change, which has no verdict, is its bootstrap delta in
points, labelled so.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from captrack.analysis.comparison import Comparison
from captrack.report.escape import md_row, md_text
from captrack.report.html import esc, table
from captrack.report.numbers import ci_text, signed, verdict_text
from captrack.report.slugs import anchor

if TYPE_CHECKING:
    from captrack.labels import VariantLabels

__all__ = ["PAIR_COLUMNS", "by_field_html", "by_field_markdown", "pair_sections", "pair_table"]

PAIR_COLUMNS = [
    "variant", "base", "task", "metric", "n", "base_value", "variant_value", "delta", "delta_ci_low", "delta_ci_high",
    "n_11", "n_10", "n_01", "n_00", "forgetting", "backward_transfer", "k", "forgetting_adj", "backward_transfer_adj",
    "mcnemar_p", "q_value", "answer_churn", "n_replicates", "n_10_all_seeds", "n_01_all_seeds", "forgetting_excess",
    "forgetting_excess_ci_low", "forgetting_excess_ci_high", "backward_transfer_excess", "backward_transfer_excess_ci_low",
    "backward_transfer_excess_ci_high", "floor_forgetting", "floor_backward_transfer",
]


def pair_table(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> pd.DataFrame:
    """Per variant and tracked (binary) task/metric: transitions.csv's row plus base and variant means and the
    delta CI the comparison computed (``Comparison.pair_deltas``)."""
    frames = []
    keys = ["variant", "task", "metric"]
    for comparison, _ in comparisons:
        if comparison.transitions.empty or comparison.pair_deltas.empty:
            continue
        place = {v.name: i for i, v in enumerate(comparison.variants)}
        merged = comparison.transitions.merge(comparison.pair_deltas, on=keys)  # the transitions' order within a variant
        merged = merged[merged["variant"].isin(place)]
        order = np.argsort(merged["variant"].map(place).to_numpy(dtype=np.int64), kind="stable")  # the variants' order
        frames.append(merged.iloc[order].assign(base=comparison.base))
    return pd.concat(frames, ignore_index=True)[PAIR_COLUMNS] if frames else pd.DataFrame(columns=PAIR_COLUMNS)


def _fmt(value: Any, digits: int = 4, signed: bool = False) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "n/a"
    return f"{float(value):+.{digits}f}" if signed else f"{float(value):.{digits}f}"


def _p(value: Any) -> str:
    return "n/a" if value is None or value is pd.NA or math.isnan(float(value)) else f"{float(value):.2g}"


def _count(value: Any) -> str:
    return "n/a" if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)) else str(int(value))


def _points(r: Any) -> str:
    """A field value's bootstrap delta in points with its CI (no verdict is decided per field value)."""
    if _fmt(r.delta) == "n/a":
        return "n/a"
    return f"{signed(100 * float(r.delta))} {ci_text(100 * float(r.delta_ci_low), 100 * float(r.delta_ci_high))}"


def _cells(r: Any, change: str | None = None) -> list[str]:
    """Displayed statistics of one pairs / by-field row, in _STAT_HEADER's order; `change`: the verdict's text for
    the Δ column (a pair), else the row's bootstrap delta in points (a field value)."""
    return [_count(r.n), _fmt(r.base_value), _fmt(r.variant_value), _points(r) if change is None else change, _count(r.n_11),
            _count(r.n_10), _count(r.n_01), _count(r.n_00), _fmt(r.forgetting), _fmt(r.backward_transfer), _count(r.k),
            _fmt(r.forgetting_adj), _fmt(r.backward_transfer_adj), _p(r.mcnemar_p), _p(r.q_value)]


_STAT_HEADER = ["n", "before", "after", "Δ, points [bootstrap 95% CI]", "n11", "n10", "n01", "n00", "F", "BT", "k", "F_adj",
                "BT_adj", "McNemar p", "q"]


def _pair_header(margin: float) -> list[str]:
    return [*_STAT_HEADER[:3], f"Δ (+ better) [95% CI] → verdict at ±{margin:g}", *_STAT_HEADER[4:]]


_VERDICT_COLUMNS = ("variant", "task", "metric", "oriented_change", "change_ci_low", "change_ci_high", "change_unit", "verdict")


def _records(frame: pd.DataFrame, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """`frame.to_dict("records")` of those of `columns` it has (a missing one stays missing, as `.get` reads it): the
    same values, without boxing every other column of thousands of rows."""
    return frame[[c for c in columns if c in frame.columns]].to_dict("records")


def _verdicts(drift: pd.DataFrame | None, margin: float) -> dict[tuple[str, str, str], str]:
    """(variant, task, metric) -> the verdict's text (drift.csv's Δ, 95% CI and verdict)."""
    if drift is None or drift.empty or "verdict" not in drift:
        return {}
    return {(str(r["variant"]), str(r["task"]), str(r["metric"])):
            verdict_text(r["oriented_change"], r["change_ci_low"], r["change_ci_high"], str(r.get("change_unit") or "points"),
                         r["verdict"], margin) for r in _records(drift, _VERDICT_COLUMNS)}
_FLIP_HEADER = ["churn", "every seed: n10 / n01", "F − E₀₀ [95% CI]", "BT − E₀₀ [95% CI]", "floor: F / BT between base seeds"]


def _flip_cells(r: Any) -> list[str]:
    """Answer churn (n/a where the metric reads no answer), the flips every seed agrees on, F and BT beyond the
    chance flips the items both got wrong explain (unclipped, with CIs), and the base's own seed-to-seed flips."""
    agree = f"{_count(r.n_10_all_seeds)} / {_count(r.n_01_all_seeds)} of {_count(r.n_replicates)}"
    floor = "n/a (one base run)" if _fmt(r.floor_forgetting) == "n/a" else (
        f"{_fmt(r.floor_forgetting)} / {_fmt(r.floor_backward_transfer)}")
    return [_count(r.answer_churn), agree, _excess(r.forgetting_excess, r.forgetting_excess_ci_low, r.forgetting_excess_ci_high),
            _excess(r.backward_transfer_excess, r.backward_transfer_excess_ci_low, r.backward_transfer_excess_ci_high), floor]


def _excess(value: Any, low: Any, high: Any) -> str:
    """A share beyond chance in points with its CI (n/a where it was not computed)."""
    if _fmt(value) == "n/a":
        return "n/a"
    return f"{signed(100 * float(value))} {ci_text(100 * float(low), 100 * float(high))}"


def _td(text: str, numeric: bool = True) -> str:
    return f'<td class="num">{esc(text)}</td>' if numeric else f"<td>{esc(text)}</td>"


def pair_sections(pairs: pd.DataFrame, drift: pd.DataFrame | None = None, margin: float = 5.0) -> tuple[str, list[str]]:
    """The "Base → variant" section of index.html and its README lines (empty when there are no transitions), each row's
    cells formatted once for both; Δ is the verdict's, from `drift` (drift.csv)."""
    if pairs.empty:
        return "", []
    said = _verdicts(drift, margin)
    rows = [(f"{r.base} → {r.variant}", f"{r.task} / {r.metric}",
             [*_cells(r, said.get((str(r.variant), str(r.task), str(r.metric)), "n/a")), *_flip_cells(r)])
            for r in pairs.itertuples()]
    return _pairs_html(rows, margin), _pairs_markdown(rows, margin)


_PairRow = tuple[str, str, list[str]]  # pair, task / metric, the displayed statistics


def _pairs_html(pair_rows: list[_PairRow], margin: float) -> str:
    rows = [[_td(pair, False), _td(what, False), *(_td(c) for c in cells)] for pair, what, cells in pair_rows]
    note = ('<p class="muted">Before / after: the metric\'s mean over the paired items; Δ, its 95% CI and verdict as in the '
            "per-task table; F = n10/n, BT = n01/n; F_adj, BT_adj subtract the flips guessing among k options explains "
            "(= F, BT when k is unknown); McNemar p: the exact test, for reference; q: Benjamini–Hochberg across the "
            "comparison's verdict p-values (a q under 0.05 only where the verdict's CI excludes 0). n10 are the harmful flips "
            "(1→0), n01 the beneficial ones (0→1); churn: items whose scored answer changed while the score did not "
            "(a wrong answer replaced by another); every seed: the flips all seeds agree on (n10/n01 pool every seed's). "
            "F_adj and BT_adj are the published, clipped forms (biased upward); F − E₀₀ and BT − E₀₀ subtract the chance "
            "flips estimated from the items both got wrong, n00/(N(k − 1)), unclipped, in points with a 95% CI (0 when "
            "nothing was forgotten beyond guessing); floor: the shares that flip between two of the base's own seeds. "
            "Data: pairs.csv.</p>")
    return '<h2 id="pairs">Base → variant, item by item</h2>' + note + table(
        ["pair", "task / metric", *_pair_header(margin), *_FLIP_HEADER], rows, "pair-table")


def by_field_html(field: str, frame: pd.DataFrame, file_name: str) -> str:
    """One section per variant: the statistics per value of `field`."""
    parts = [f'<h2 id="{esc(anchor("by", field))}">By {esc(field)}</h2>'
             f'<p class="muted">The same statistics within each {esc(field)}. Data: {esc(file_name)}.</p>']
    for (variant, task, metric), group in frame.groupby(["variant", "task", "metric"], sort=False):
        rows = [[_td(str(r[5]), False), *(_td(c) for c in _cells(r))] for r in group.itertuples()]
        parts.append(f"<h3>{esc(variant)}: {esc(task)} / {esc(metric)}</h3>")
        parts.append(table([field, *_STAT_HEADER], rows, anchor("by", field, variant, task, metric)))
    return "\n".join(parts)


def _md_row(labels: list[str], numbers: list[str] | None = None) -> str:
    """A README table row: `labels` (names people chose) made literal, then `numbers` (formatted statistics)."""
    return md_row([md_text(c) for c in labels] + [c.replace("|", "\\|") for c in numbers or []])


def _pairs_markdown(pair_rows: list[_PairRow], margin: float) -> list[str]:
    lines = ["## Base → variant, item by item", "", _md_row(["pair", "task / metric"], [*_pair_header(margin), *_FLIP_HEADER]),
             "|---" * (len(_STAT_HEADER) + len(_FLIP_HEADER) + 2) + "|"]
    lines += [_md_row([pair, what], cells) for pair, what, cells in pair_rows]
    return [*lines, ""]


def by_field_markdown(field: str, frame: pd.DataFrame) -> list[str]:
    """README lines: one table per variant, task and metric, a row per value of `field`."""
    lines = [f"## By {md_text(field, table=False)}", ""]
    for (variant, task, metric), group in frame.groupby(["variant", "task", "metric"], sort=False):
        lines += [f"### {md_text(variant, table=False)}: {md_text(task, table=False)} / {md_text(metric, table=False)}", "", _md_row([field], _STAT_HEADER), "|---" * (len(_STAT_HEADER) + 1) + "|"]
        lines += [_md_row([str(r[5])], _cells(r)) for r in group.itertuples()]
        lines.append("")
    return lines
