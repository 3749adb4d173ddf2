"""The board's pictures of changes in points: the forest plot (capability × variant, Δ with its 95% CI, the margin
band, the verdict's mark) and the task × algorithm matrix (mean Δ over each algorithm's variants), with the sections
of index.html and README.md that show them.

Both read the verdicts' own numbers (capabilities.csv's and drift.csv's oriented_change and its CI), never relative
drift: one unit, points (the change of a 0/1 metric × 100, or a count metric's % of base, said where it occurs).
A board of aggregate scores has no CI and no verdict, so it has neither picture.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from captrack.report.background import Call
from captrack.report.board_model import Cells, scale_label
from captrack.report.escape import md_text
from captrack.report.figures import _empty_figure, _pyplot, _save
from captrack.report.html import esc, table
from captrack.report.numbers import missing, signed_change
from captrack.report.verdict_cells import VERDICT_MARKS

__all__ = ["FOREST", "MATRIX", "VERDICT_COLOURS", "figure_calls", "forest_figure", "matrix_figure", "picture_html", "picture_markdown",
           "task_algorithm_marks", "task_algorithm_matrix"]

FOREST, MATRIX = "forest", "task_algorithm"
VERDICT_COLOURS = {"regressed": "#b3261e", "improved": "#1a5e9a", "equivalent": "#2e6b3a", "inconclusive": "#8d96a3",
                   "changed": "#6a4c93", "": "#444444"}
_MOST_ROWS = 400  # a forest of more rows (a board of hundreds of variants) shows the group means only
_MARKED_ROWS = 150  # up to this many rows each point is followed by its verdict's mark (beyond: its colour says it)


def forest_figure(value: pd.DataFrame, low: pd.DataFrame, high: pd.DataFrame, verdict: pd.DataFrame, margin: float,
                  unit: str, out: Path) -> list[Path]:
    """Forest plot: one row per (capability, variant), Δ (+ better) with its 95% CI, the ± margin band shaded, each
    point coloured by its verdict and followed by its mark. Frames: rows capability labels (the grid's), columns
    variants; `unit`: the unit of Δ as the grid says it."""
    rows, headings = _forest_rows(value, low, high, verdict)
    if rows.empty:
        return _empty_figure(out, FOREST, "No capability has a change with a CI to draw.")
    plt = _pyplot()
    size = len(rows) + len(headings)
    fig, ax = plt.subplots(figsize=(8.0, max(min(1.4 + 0.2 * size, 80.0), 2.5)))
    ax.axvspan(-margin, margin, color="#e3e8ef", linewidth=0, zorder=0, label=f"±{margin:g} margin")
    ax.axvline(0.0, color="#444444", linewidth=0.8, zorder=1)
    for found, part in rows.groupby("verdict", sort=True):
        mean, lo, hi = (part[c].to_numpy(dtype=float) for c in ("value", "low", "high"))
        err = np.vstack([np.where(np.isnan(lo), 0.0, mean - lo), np.where(np.isnan(hi), 0.0, hi - mean)])
        ax.errorbar(mean, part["y"].to_numpy(dtype=float), xerr=err, fmt="o", markersize=4, capsize=2, zorder=3,
                    color=VERDICT_COLOURS.get(str(found), "#444444"), label=f"{VERDICT_MARKS.get(str(found), '')} {found}".strip())
    for r in rows.itertuples() if len(rows) <= _MARKED_ROWS else ():
        end = r.value if missing(r.high) else r.high
        ax.annotate(VERDICT_MARKS.get(str(r.verdict), ""), (end, r.y), xytext=(4, -3), textcoords="offset points", fontsize=8,
                    color=VERDICT_COLOURS.get(str(r.verdict), "#444444"))
    named = len(rows) <= _MARKED_ROWS  # beyond, only the capabilities are named (the variants in the grid's order)
    ticks = sorted([(float(y), str(v), False) for y, v in zip(rows["y"], rows["variant"], strict=True) if named]
                   + [(float(y), label, True) for label, y in headings.items()])
    ax.set_yticks([t[0] for t in ticks], [t[1] for t in ticks], fontsize=8)
    for tick, (_, _, heading) in zip(ax.get_yticklabels(), ticks, strict=True):
        tick.set_fontweight("bold" if heading else "normal")
    ax.set_ylim(size - 0.5, -0.5)
    ax.margins(x=0.08)
    ax.set_xlabel(f"Δ vs base, + better ({unit}), 95% CI")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    ax.set_title(f"Change per capability and variant ({unit}); shaded: the ±{margin:g} equivalence margin", loc="left")
    return _save(fig, out, FOREST)


def _forest_rows(value: pd.DataFrame, low: pd.DataFrame, high: pd.DataFrame, verdict: pd.DataFrame
                 ) -> tuple[pd.DataFrame, dict[str, int]]:
    """Long rows (capability, variant, value, low, high, verdict, y) in the grid's order, and the y of each capability's
    heading above its rows; group means only where the capabilities would be too many rows to read."""
    labels = [str(c) for c in value.index if not str(c).endswith(" (mean)")]
    if len(labels) * value.shape[1] > _MOST_ROWS:
        labels = [str(c) for c in value.index if str(c).endswith(" (mean)")]
    out, headings, y = [], {}, 0
    for label in labels:
        shown = [v for v in value.columns if not missing(value.at[label, v])]
        if not shown:
            continue
        headings[label], y = y, y + 1
        for variant in shown:
            out.append({"capability": label, "variant": str(variant), "value": float(value.at[label, variant]),
                        "low": float(low.at[label, variant]), "high": float(high.at[label, variant]),
                        "verdict": str(verdict.at[label, variant] or ""), "y": y})
            y += 1
    return pd.DataFrame(out, columns=["capability", "variant", "value", "low", "high", "verdict", "y"]), headings


def task_algorithm_matrix(per_task: pd.DataFrame, checkpoints: pd.DataFrame) -> pd.DataFrame:
    """Rows ``task / metric`` (with `` (% of base)`` for a count metric), columns algorithms: the mean oriented Δ (+
    better) over the algorithm's variants; empty without verdicts."""
    if per_task.empty or "oriented_change" not in per_task or per_task["oriented_change"].isna().all():
        return pd.DataFrame()
    algorithm = {str(v): (str(a) or "(none)") for v, a in zip(checkpoints["variant"], checkpoints["algorithm"], strict=True)}
    rows = per_task.dropna(subset=["oriented_change"])
    unit = rows["change_unit"].fillna("points").astype(str)
    label = rows["task"].astype(str) + " / " + rows["metric"].astype(str) + np.where(unit == "% of base", " (% of base)", "")
    frame = pd.DataFrame({"row": label, "algorithm": rows["variant"].astype(str).map(algorithm).fillna("(none)"),
                          "change": rows["oriented_change"].astype(float)})
    return frame.pivot_table(index="row", columns="algorithm", values="change", aggfunc="mean", sort=True)


def task_algorithm_marks(per_task: pd.DataFrame, checkpoints: pd.DataFrame, matrix: pd.DataFrame) -> pd.DataFrame:
    """The matrix's verdict marks: a cell's mark where every variant of its algorithm got the same verdict on the
    task (``▼`` all regressed), else ``""``."""
    marks = pd.DataFrame("", index=matrix.index, columns=matrix.columns, dtype=object)
    if matrix.empty:
        return marks
    algorithm = {str(v): (str(a) or "(none)") for v, a in zip(checkpoints["variant"], checkpoints["algorithm"], strict=True)}
    rows = per_task.dropna(subset=["oriented_change"])
    unit = rows["change_unit"].fillna("points").astype(str)
    label = rows["task"].astype(str) + " / " + rows["metric"].astype(str) + np.where(unit == "% of base", " (% of base)", "")
    found = pd.DataFrame({"row": label, "algorithm": rows["variant"].astype(str).map(algorithm).fillna("(none)"),
                          "verdict": rows["verdict"].fillna("").astype(str)})
    for (row, name), verdicts in found.groupby(["row", "algorithm"])["verdict"]:
        if verdicts.nunique() == 1 and row in marks.index and name in marks.columns:
            marks.at[row, name] = VERDICT_MARKS.get(str(verdicts.iloc[0]), "")
    return marks


def _marked(value: float, mark: str) -> str:
    """A matrix cell: the mean Δ and its shared verdict's mark; never a rounded 0.0 beside a mark of a CI that
    excludes 0 (▼ ▲ •)."""
    if missing(value):
        return "n/a"
    return f"{signed_change(value, mark in ('▼', '▲', '•'))} {mark}".strip()


def matrix_figure(matrix: pd.DataFrame, out: Path, marks: pd.DataFrame | None = None, color_cap: float = 15.0) -> list[Path]:
    """Heatmap of task × algorithm mean Δ (points, + better: blue), each cell annotated with its value and the mark
    its variants' shared verdict has (`marks`, task_algorithm_marks)."""
    import seaborn as sns

    plt = _pyplot()
    if matrix.empty:
        return _empty_figure(out, MATRIX, "No task has a change with a verdict.")
    fig, ax = plt.subplots(figsize=(max(4.5, 3.5 + 1.0 * matrix.shape[1]), min(max(2.5, 1.0 + 0.32 * matrix.shape[0]), 80.0)))
    shown = marks if marks is not None else pd.DataFrame("", index=matrix.index, columns=matrix.columns)
    labels = np.vectorize(lambda v, m: "" if np.isnan(v) else _marked(v, str(m)))(matrix.to_numpy(dtype=float),
                                                                                  shown.to_numpy(dtype=object))
    sns.heatmap(matrix.astype(float), ax=ax, cmap="RdBu", center=0.0, vmin=-color_cap, vmax=color_cap,
                annot=labels if matrix.size <= 1200 else False, fmt="", linewidths=0.5, linecolor="white",
                cbar_kws={"label": "mean Δ (points)", "shrink": 0.6})
    ax.set_xlabel("")
    ax.set_ylabel("")
    ax.set_title("Change per task by post-training algorithm\n(points, + better; mean over its variants)", loc="left")
    return _save(fig, out, MATRIX)


_FOREST_NOTE = ("Each row: a capability's Δ for one variant (+ better) with its 95% CI, coloured by its verdict (▼ regressed, "
                "▲ improved, ≈ equivalent, ? inconclusive, • changed); shaded: ± the margin that decides equivalence.")
_MATRIX_NOTE = ("Each cell: the mean Δ (+ better, points; a count metric in % of base, so marked) of the algorithm's "
                "variants on one task, with the verdict's mark where all its variants share one (▼ regressed, ▲ improved, "
                "≈ equivalent, ? inconclusive, • changed); each variant's verdict is in the per-task table.")


def picture_html(names: set[str], per_task: pd.DataFrame, checkpoints: pd.DataFrame) -> list[str]:
    """The index's forest plot and task × algorithm matrix (figure and table), where they were drawn."""
    matrix = task_algorithm_matrix(per_task, checkpoints)
    marks = task_algorithm_marks(per_task, checkpoints, matrix)
    parts = []
    if f"{FOREST}.png" in names:
        parts.append(f'<h2 id="forest">Change per capability, with its CI</h2><figure><img src="figures/{FOREST}.png" '
                     f'alt="forest plot of each capability\'s change with its 95% CI" width="760"></figure>'
                     f'<p class="muted">{esc(_FOREST_NOTE)}</p>')
    if f"{MATRIX}.png" in names and not matrix.empty:
        rows = [[f"<td>{esc(label)}</td>", *(_cell(matrix.at[label, a], marks.at[label, a]) for a in matrix.columns)]
                for label in matrix.index]
        parts += [f'<h2 id="task-algorithm">Change per task, by algorithm (points)</h2><figure><img src="figures/{MATRIX}.png" '
                  'alt="task by algorithm matrix of changes" width="700"></figure>'
                  f'<p class="muted">{esc(_MATRIX_NOTE)}</p>',
                  table(["task / metric", *(f"{a} Δ (mean)" for a in matrix.columns)], rows, "task-algorithm-table")]
    return parts


def _cell(value: float, mark: str) -> str:
    if missing(value):
        return '<td class="num" data-sort="">n/a</td>'
    text = _marked(value, mark)
    cls = "" if text.split(" ")[0] == "0.0" else ("pos" if value > 0 else "neg")
    return f'<td class="num {cls}" data-sort="{value:.6g}">{esc(text)}</td>'


def picture_markdown(with_verdicts: bool, per_task: pd.DataFrame, checkpoints: pd.DataFrame) -> list[str]:
    """The README's forest plot and task × algorithm matrix, where they are drawn (figure_calls: a board with
    verdicts)."""
    lines: list[str] = []
    names = {f"{FOREST}.png", f"{MATRIX}.png"} if with_verdicts else set()
    matrix = task_algorithm_matrix(per_task, checkpoints)
    marks = task_algorithm_marks(per_task, checkpoints, matrix)
    if f"{FOREST}.png" in names:
        lines += ["## Change per capability, with its CI", "", f"![forest plot](figures/{FOREST}.png)", "", _FOREST_NOTE, ""]
    if f"{MATRIX}.png" in names and not matrix.empty:
        lines += ["## Change per task, by algorithm (points)", "", f"![task × algorithm](figures/{MATRIX}.png)", "",
                  _MATRIX_NOTE, "", "| task / metric | " + " | ".join(f"{md_text(a)} Δ (mean)" for a in matrix.columns) + " |",
                  "|---" * (matrix.shape[1] + 1) + "|"]
        lines += [f"| {md_text(label)} | " + " | ".join(_marked(matrix.at[label, a], marks.at[label, a]) for a in matrix.columns)
                  + " |" for label in matrix.index]
        lines.append("")
    return lines


def figure_calls(out: Path, cells: Cells, margin: float, per_task: pd.DataFrame, checkpoints: pd.DataFrame,
                 aggregate_only: bool) -> dict[str, Call]:
    """The forest plot and task × algorithm matrix to draw (captrack.report.background calls by stem); none for a
    board without verdicts (aggregate scores: no CI to draw)."""
    if aggregate_only or not cells.with_verdicts:
        return {}
    calls: dict[str, Call] = {FOREST: (forest_figure, (cells.value, cells.low, cells.high, cells.verdict, margin,
                                                       scale_label(cells), out), {})}
    matrix = task_algorithm_matrix(per_task, checkpoints)
    if not matrix.empty:
        calls[MATRIX] = (matrix_figure, (matrix, out, task_algorithm_marks(per_task, checkpoints, matrix)), {})
    return calls
