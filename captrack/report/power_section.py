"""The leaderboard's power table: per task, what its paired items can detect (minimum detectable effect).

One row per base, task and metric (variants of one base share their items' planned power): capability
group, capability, n, base value and the MDE as an absolute change ("points" for rates: 100 × the
change in the rate) and as a percent of the base value. Tasks are sorted by group, then capability.
"""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.escape import md_text
from captrack.report.html import esc, table

__all__ = ["power_rows", "power_sections"]

GOAL_POINTS = 10.0
"""The demo's design goal: at most 10 points on at least two tasks per group."""

_ORDER = {"CAN": 0, "WILL": 1, "HOW": 2}


def power_rows(drift: pd.DataFrame, power: pd.DataFrame) -> pd.DataFrame:
    """Power rows deduplicated over variants with the same items, with each task's group and capability."""
    if power.empty:
        return pd.DataFrame(columns=["group", "capability", "task", "metric", "kind", "n", "base_value", "mde_abs", "mde_pct"])
    where = drift.drop_duplicates(["task", "metric"])[["task", "metric", "group", "capability"]]
    rows = power.merge(where, on=["task", "metric"], how="left").fillna({"group": "", "capability": ""})
    rows = rows.drop_duplicates(["task", "metric", "n", "base_value"])
    rows = rows.assign(order=rows["group"].map(_ORDER).fillna(len(_ORDER)))
    columns = ["group", "capability", "task", "metric", "kind", "n", "base_value", "mde_abs", "mde_pct"]
    return rows.sort_values(["order", "capability", "task", "metric", "n"])[columns].reset_index(drop=True)


def _points(row: pd.Series) -> str:
    """The MDE in points for rates (binary items), else in the metric's own units."""
    if math.isnan(row.mde_abs):
        return "n/a"
    return f"{100 * row.mde_abs:.1f} points" if row.kind == "binary" else f"{row.mde_abs:.3g}"


def _summary(rows: pd.DataFrame) -> str:
    """How many tasks per group reach the goal of at most GOAL_POINTS points."""
    rates = rows[rows["kind"] == "binary"]
    counts = [f"{group} {int((rates[rates['group'] == group]['mde_abs'] * 100 <= GOAL_POINTS).sum())}"
              for group in _ORDER if (rows["group"] == group).any()]
    return (f"Tasks whose rate metric can detect a change of {GOAL_POINTS:.0f} points or less (80% power, two-sided "
            f"α = 0.05, paired; planned from n and the base rate): " + ", ".join(counts) + ".")


def power_sections(drift: pd.DataFrame, power: pd.DataFrame) -> tuple[str, str]:
    """(HTML, Markdown) sections with the power table; empty strings where there are no items."""
    rows = power_rows(drift, power)
    if rows.empty:
        return "", ""
    intro = ("What these items can detect: the minimum detectable effect (MDE) of each task, as an absolute change "
             "(points of a rate, or the metric's units) and as a percent of the base value. A drift smaller than its "
             "MDE can be real and still go undetected. " + _summary(rows))
    html_rows = [[f"<td>{esc(r.group)}</td>", f"<td>{esc(r.capability)}</td>", f"<td>{esc(r.task)}</td>", f"<td>{esc(r.metric)}</td>",
                  f'<td class="num">{int(r.n)}</td>', f'<td class="num">{r.base_value:.4g}</td>',
                  f'<td class="num">{esc(_points(r))}</td>', f'<td class="num">{_pct(r.mde_pct)}</td>'] for r in rows.itertuples()]
    html = (f'<h2 id="power">What the items can detect</h2><p>{esc(intro)}</p>'
            + table(["group", "capability", "task", "metric", "n", "base", "MDE", "MDE % of base"], html_rows, "power-table"))
    md = ["## What the items can detect", "", md_text(intro, table=False), "",
          "| group | capability | task | metric | n | base | MDE | MDE % of base |", "|---|---|---|---|---|---|---|---|"]
    md += [f"| {md_text(r.group)} | {md_text(r.capability)} | {md_text(r.task)} | {md_text(r.metric)} | {int(r.n)} | "
           f"{r.base_value:.4g} | {_points(r)} | {_pct(r.mde_pct)} |" for r in rows.itertuples()]
    return html, "\n".join(md) + "\n"


def _pct(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.1f}%"
