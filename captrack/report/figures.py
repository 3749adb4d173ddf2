"""Leaderboard figures (seaborn/matplotlib): capability heatmap, per-algorithm summary, F vs BT.

Every figure is written as PNG and SVG with fixed metadata, so regenerating gives identical bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from captrack.report.numbers import signed_change
from captrack.report.verdict_cells import VERDICT_MARKS

__all__ = ["VERDICT_MARKS", "algorithm_colors", "algorithm_summary_figure", "f_vs_bt_figure", "heatmap_figure", "warm_up"]

GROUP_COLORS = {"CAN": "#1b6ca8", "WILL": "#b8860b", "HOW": "#2e8b57"}
_PALETTE = ["#d1495b", "#00798c", "#edae49", "#66a182", "#8d96a3", "#6a4c93", "#f28482", "#2e4057"]


def algorithm_colors(algorithms: Sequence[str]) -> dict[str, str]:
    """A stable colour per algorithm label (sorted, so the same label keeps its colour)."""
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(sorted(set(algorithms)))}


def warm_up() -> None:
    """Import what drawing needs (pyplot, seaborn: seconds of a core) ahead of the first figure: a process that
    will draw does it while its caller computes what to draw (captrack.report.background)."""
    import seaborn  # noqa: F401

    _pyplot()


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Labels (variant names, algorithms) are drawn literally: a `$x$` name is text, never mathtext or TeX.
    plt.rcParams.update({"svg.hashsalt": "captrack", "font.size": 10, "figure.dpi": 100,
                         "text.usetex": False, "text.parse_math": False})
    return plt


def _save(fig: Any, out: Path, stem: str) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    fig.savefig(paths[0], dpi=110, bbox_inches="tight", metadata={"Software": None})
    fig.savefig(paths[1], bbox_inches="tight", metadata={"Date": None, "Creator": None})
    _pyplot().close(fig)
    return paths


def _empty_figure(out: Path, stem: str, message: str) -> list[Path]:
    """A figure that says in words why there is nothing to draw."""
    fig, ax = _pyplot().subplots(figsize=(6.0, 1.5))
    ax.axis("off")
    ax.text(0.0, 0.5, message, ha="left", va="center", wrap=True)
    return _save(fig, out, stem)


def heatmap_figure(matrix: pd.DataFrame, significant: pd.DataFrame, out: Path, color_cap: float = 15.0,
                   with_cis: bool = True, colors: pd.DataFrame | None = None,
                   verdicts: pd.DataFrame | None = None, unit: str = "") -> list[Path]:
    """CapTrack-style heatmap: rows capabilities (and group means), columns variants.

    Args:
        matrix: the value printed in each cell, index = row labels (e.g. ``C1 Parametric knowledge``),
            columns = variants: the verdict's change Δ (``unit`` given) or relative drift in % (aggregate
            scores, which have no verdict).
        significant: same shape, True where a cell is significant (marked with ``*`` without `verdicts`).
        with_cis: False for aggregate scores: no marks anywhere and the title says there are no CIs.
        colors: same shape, the value that sets each cell's colour, + better: blue, − worse: red (NaN, a
            capability without a better side: white); default the printed value.
        verdicts: same shape, each cell's verdict, marked ▼ regressed, ▲ improved, ≈ equivalent,
            ? inconclusive, • changed (replacing ``*``).
        unit: the unit of Δ as the colour bar says it ("points", or "points; count metrics % of base");
            empty: the cells are relative drift in %.
    """
    import seaborn as sns

    plt = _pyplot()
    if matrix.size == 0:
        return _empty_figure(out, "heatmap", "No capability could be measured (no tracked metric with a non-zero base).")
    n_cols = matrix.shape[1]
    transpose = n_cols > 30  # many variants: variants become rows so labels stay readable
    data = matrix.T if transpose else matrix
    marks = significant.T if transpose else significant
    shade = data if colors is None else (colors.T if transpose else colors)
    shade = shade.astype(float).where(shade.notna() | data.isna(), 0.0)  # no better side: white
    if verdicts is not None and with_cis:
        shown = verdicts.T if transpose else verdicts
        suffix = np.vectorize(lambda v: VERDICT_MARKS.get(str(v), ""))(shown.to_numpy(dtype=object))
    else:
        suffix = np.where(marks.to_numpy(dtype=bool) & with_cis, "*", "")
    width = min(2.0 + 0.55 * data.shape[1], 40.0)
    height = min(1.2 + 0.32 * data.shape[0], 80.0)
    fig, ax = plt.subplots(figsize=(max(width, 6.0), max(height, 3.0)))
    away = marks.to_numpy(dtype=bool) & with_cis  # significant: the 95% CI excludes 0, so never a rounded 0.0
    labels = np.vectorize(lambda v, s, a: "" if np.isnan(v) else f"{signed_change(v, bool(a))}{s}")(
        data.to_numpy(dtype=float), suffix, away)
    sns.heatmap(
        shade, ax=ax, cmap="RdBu", center=0.0, vmin=-color_cap, vmax=color_cap,
        annot=labels if data.size <= 1200 else False, fmt="", linewidths=0.5, linecolor="white",
        cbar_kws={"label": _scale(unit, colors is not None), "shrink": 0.6},
    )
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.tick_params(axis="x", rotation=45 if not transpose else 0)
    for label in ax.get_xticklabels():
        label.set_horizontalalignment("right" if not transpose else "center")
    if not with_cis:
        title = "aggregate scores: no CIs"
    elif verdicts is not None:
        title = "▼ regressed ▲ improved ≈ equivalent ? inconclusive • changed"
    else:
        title = "* = 95% CI excludes 0"
    shading = "colour: + better blue, − worse red; " if colors is not None else ""
    what = f"Capability change Δ vs base ({unit}" if unit else "Capability drift vs base (%"
    ax.set_title(f"{what}; {shading}{title})", loc="left")
    return _save(fig, out, "heatmap")


def _scale(unit: str, oriented: bool) -> str:
    """The colour bar's label: what the colour measures, in its unit."""
    if unit:
        return f"Δ vs base, + better ({unit})"
    return "oriented drift (% of base): + better, − worse" if oriented else "relative drift (% of base)"


def algorithm_summary_figure(summary: pd.DataFrame, colors: dict[str, str], out: Path) -> list[Path]:
    """Mean drift per capability for each algorithm, with CI whiskers (points, one row per capability)."""
    plt = _pyplot()
    caps = list(dict.fromkeys(summary["key"]))
    algorithms = sorted(summary["algorithm"].unique())
    fig, ax = plt.subplots(figsize=(8.0, 1.0 + 0.35 * len(caps)))
    offsets = np.linspace(-0.25, 0.25, num=max(len(algorithms), 1)) if len(algorithms) > 1 else [0.0]
    for offset, algorithm in zip(offsets, algorithms, strict=True):
        rows = summary[summary["algorithm"] == algorithm].set_index("key").reindex(caps)
        y = np.arange(len(caps)) + offset
        mean = rows["mean_rel_drift_pct"].to_numpy(dtype=float)
        low, high = rows["ci_low"].to_numpy(dtype=float), rows["ci_high"].to_numpy(dtype=float)
        err = np.vstack([np.where(np.isnan(low), 0, mean - low), np.where(np.isnan(high), 0, high - mean)])
        ax.errorbar(mean, y, xerr=err, fmt="o", color=colors[algorithm], label=algorithm, capsize=2, markersize=4)
    ax.axvline(0.0, color="#444444", linewidth=0.8)
    ax.set_yticks(np.arange(len(caps)), caps)
    ax.invert_yaxis()
    ax.set_xlabel("mean relative drift across variants (%), 95% CI")
    ax.legend(loc="lower right", fontsize=8, frameon=False)
    ax.set_title("Relative drift per capability by post-training algorithm (% of base)", loc="left")
    return _save(fig, out, "algorithms")


def f_vs_bt_figure(points: pd.DataFrame, colors: dict[str, str], out: Path) -> list[Path]:
    """Chance-adjusted forgetting vs backward transfer per checkpoint (Harmon et al. style)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 5.0))
    for algorithm, rows in points.groupby("algorithm", sort=True):
        ax.scatter(100 * rows["backward_transfer_adj"], 100 * rows["forgetting_adj"], s=36,
                   color=colors[str(algorithm)], label=str(algorithm) or "(none)", alpha=0.85)
        if len(points) <= 40:
            for r in rows.itertuples():
                ax.annotate(str(r.variant), (100 * r.backward_transfer_adj, 100 * r.forgetting_adj),
                            fontsize=7, xytext=(3, 3), textcoords="offset points")
    top = float(np.nanmax(100 * points[["forgetting_adj", "backward_transfer_adj"]].to_numpy(dtype=float))) if len(points) else 1.0
    limit = max(top * 1.15, 1.0)
    ax.plot([0, limit], [0, limit], color="#999999", linestyle="--", linewidth=0.8)
    ax.set_xlim(0, limit)
    ax.set_ylim(0, limit)
    ax.set_xlabel("backward transfer, chance-adjusted (% of items, 0→1)")
    ax.set_ylabel("forgetting, chance-adjusted (% of items, 1→0)")
    ax.legend(fontsize=8, frameon=False)
    ax.set_title("Forgetting vs backward transfer per checkpoint", loc="left")
    return _save(fig, out, "f_vs_bt")
