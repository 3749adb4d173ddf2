"""Drift over training, for people: small multiples of drift vs step per capability (one line per variant,
coloured by algorithm, its 95% CI as a band, the MDE band shaded around 0), F_adj / BT_adj vs step, and the
per-capability summary (first step beyond noise, trend with its CI, item churn) as HTML and Markdown."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from captrack.report.escape import md_text
from captrack.report.figures import _pyplot, _save, algorithm_colors
from captrack.report.html import esc, table

__all__ = ["curve_figures", "over_training_html", "over_training_markdown", "over_training_sections", "over_training_tables"]

DRIFT_FIGURE, RATES_FIGURE = "drift_over_training", "rates_over_training"
INTRO = ("Every saved step of a trajectory is compared with the base exactly like an end point. Lines: drift "
         "(% of the base) per capability at each step; band: its 95% paired-bootstrap CI; grey: the MDE band "
         "(changes inside it go undetected with 80% power). First step beyond noise: the earliest step whose CI "
         "excludes 0. Trend: least-squares slope over steps (per 1,000 steps), CI from the same item resamples "
         "at every step. Churn: items forgotten at a step and right again later, and gained then lost.")


def _grid(keys: Sequence[str]) -> tuple[Any, Any, Any]:
    plt = _pyplot()
    cols = min(4, max(1, len(keys)))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.6 * rows), squeeze=False, sharex=True)
    for ax in axes.ravel()[len(keys):]:
        ax.axis("off")
    return plt, fig, axes.ravel()


def curve_figures(curves: pd.DataFrame, out: Path) -> list[Path]:
    """Write the two figures (PNG and SVG) into `out`; none when no capability row exists."""
    caps = curves[curves["level"] == "capability"]
    keys = list(dict.fromkeys(caps["key"]))
    if not keys:
        return []
    colors = algorithm_colors([a or "(none)" for a in caps["algorithm"]])
    _, fig, axes = _grid(keys)
    for ax, key in zip(axes, keys, strict=False):
        rows = caps[caps["key"] == key].sort_values("step")
        mde = float(rows["mde_pct"].max()) if rows["mde_pct"].notna().any() else math.nan
        if not math.isnan(mde):
            ax.axhspan(-mde, mde, color="#dddddd", alpha=0.6, linewidth=0)
        ax.axhline(0, color="#777777", linewidth=0.8)
        for (variant, algorithm), line in rows.groupby(["variant", "algorithm"], sort=True):
            color = colors[str(algorithm) or "(none)"]
            ax.fill_between(line["step"], line["ci_low"], line["ci_high"], color=color, alpha=0.18, linewidth=0)
            ax.plot(line["step"], line["drift_pct"], marker="o", markersize=3, color=color, label=f"{variant} ({algorithm or '-'})")
        ax.set_title(str(key), loc="left", fontsize=9)
    axes[0].set_ylabel("drift, % of base")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle("Drift over training per capability (band: 95% CI; grey: MDE)", x=0.01, y=1.03, ha="left")
    written = _save(fig, out, DRIFT_FIGURE)
    _, fig, axes = _grid(keys)
    for ax, key in zip(axes, keys, strict=False):
        rows = caps[caps["key"] == key].sort_values("step")
        for (variant, algorithm), line in rows.groupby(["variant", "algorithm"], sort=True):
            color = colors[str(algorithm) or "(none)"]
            ax.plot(line["step"], 100 * line["forgetting_adj"], marker="o", markersize=3, color=color, label=f"{variant} F_adj")
            ax.plot(line["step"], 100 * line["backward_transfer_adj"], marker="s", markersize=3, color=color, linestyle="--",
                    label=f"{variant} BT_adj")
        ax.set_title(str(key), loc="left", fontsize=9)
    axes[0].set_ylabel("% of items")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle("Chance-adjusted forgetting (solid) and backward transfer (dashed) over training", x=0.01, y=1.03,
                 ha="left")
    return written + _save(fig, out, RATES_FIGURE)


def _summary_cells(row: Any) -> list[str]:
    first = "not yet" if pd.isna(row.first_step_beyond_noise) else f"{int(row.first_step_beyond_noise)}"
    trend = "n/a" if pd.isna(row.trend_pct_per_step) else (
        f"{1000 * row.trend_pct_per_step:+.2f} [{1000 * row.trend_ci_low:+.2f}, {1000 * row.trend_ci_high:+.2f}]"
        if not pd.isna(row.trend_ci_low) else f"{1000 * row.trend_pct_per_step:+.2f}")
    final = "n/a" if pd.isna(row.final_drift_pct) else f"{row.final_drift_pct:+.1f}% at {int(row.final_step)}"
    return [str(row.variant), str(row.algorithm), str(row.capability), first, final, trend,
            str(int(row.forgotten_regained)), str(int(row.gained_lost))]


HEADER = ["variant", "algorithm", "capability", "first step beyond noise", "final drift", "trend per 1k steps [95% CI]",
          "forgotten → regained", "gained → lost"]


def over_training_html(summary: pd.DataFrame, figures: Sequence[Path], prefix: str = "figures/") -> str:
    """The "Over training" section of a leaderboard page."""
    images = "".join(f'<p><img src="{esc(prefix + p.name)}" alt="{esc(p.stem)}" style="max-width:100%"></p>'
                     for p in figures if p.suffix == ".svg")
    rows = [[f"<td>{esc(c)}</td>" for c in _summary_cells(r)] for r in summary.itertuples()]
    return (f'<h2 id="over-training">Over training</h2><p>{esc(INTRO)}</p>{images}'
            + table(HEADER, rows, "over-training-table"))


def over_training_markdown(summary: pd.DataFrame, figures: Sequence[Path], prefix: str = "figures/") -> str:
    """The "Over training" section of report.md / a board's README.md."""
    lines = ["## Over training", "", md_text(INTRO, table=False), ""]
    lines += [f"![{p.stem}]({prefix}{p.name})" for p in figures if p.suffix == ".png"]
    lines += ["", "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(md_text(c) for c in _summary_cells(r)) + " |" for r in summary.itertuples()]
    return "\n".join(lines) + "\n"


def over_training_tables(curves: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """curves.csv, curve_summary.csv and curve_items.csv of every trajectory (captrack.analysis.curves.Curves);
    {} when no variant is a trajectory."""
    if not curves:
        return {}
    return {name: pd.concat([getattr(c, attr) for c in curves], ignore_index=True) for name, attr in
            (("curves.csv", "curves"), ("curve_summary.csv", "summary"), ("curve_items.csv", "churn_items"))}


def over_training_sections(tables: dict[str, pd.DataFrame], figures_dir: Path, prefix: str = "figures/") -> tuple[str, str, list[Path]]:
    """(HTML, Markdown, figures written) of the "Over training" section; empty without trajectories."""
    if not tables:
        return "", "", []
    figures = curve_figures(tables["curves.csv"], figures_dir)
    summary = tables["curve_summary.csv"]
    return over_training_html(summary, figures, prefix), over_training_markdown(summary, figures, prefix), figures
