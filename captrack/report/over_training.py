"""Drift over training, for people: small multiples of drift vs step per capability (one line per variant,
coloured by algorithm, its 95% CI as a band, the MDE band shaded around 0), F_adj / BT_adj vs step, and the
per-capability summary (first significant step, trend with its CI, item churn) as HTML and Markdown."""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from captrack.report.escape import md_text
from captrack.report.figures import _pyplot, _save, algorithm_colors
from captrack.report.html import esc, page, table
from captrack.report.numbers import signed
from captrack.report.slugs import anchor, task_page_name
from captrack.report.step_texts import FlipKey, StepTexts, flip_text_cell

__all__ = ["STEPS_PAGE", "curve_figures", "flip_anchor", "over_training_html", "over_training_markdown", "over_training_sections",
           "over_training_tables", "steps_page"]

DRIFT_FIGURE, RATES_FIGURE = "drift_over_training", "rates_over_training"
STEPS_PAGE = "steps.html"  # the items that flipped at each step, one anchor per (variant, step, capability)
INTRO = ("Every saved step of a trajectory is compared with the base exactly like an end point. Lines: the change Δ "
         "(points, + better) per capability at each step, from step 0 (the base itself, hollow); band: the verdict's "
         "95% CI; grey: the MDE band (changes inside it go undetected with 80% power). The table's final drift and trend "
         "are relative drift (% of base), CapTrack's unit. First significant step: the first step significant after "
         "control over K steps (windows of consecutive steps, max-T): every window of consecutive steps is tested on "
         "the paired change of its items' mean over its checkpoints, with one critical value for all windows from "
         "their joint null (short windows penalised), and the first step is the earliest end of a significant window; "
         "an unchanged capability gets one in at most 5% of trajectories, and a change is dated before its onset in at "
         "most 5% (each step's own 5% rule alone: 1 − 0.95^K, 40% at K = 10). Trend: least-squares slope of drift over steps, CI from the same item resamples "
         "at every step. Churn: items forgotten at a step and right again later, and gained then lost.")
FLIPS_INTRO = ("Items that flipped at each step, against the step evaluated before it (the base before the first): "
               "forgotten (right before, wrong now) / gained. Each count, and each point of the drift figure, leads "
               "to the items.")


def flip_anchor(variant: str, step: int, capability: str) -> str:
    """The HTML id of one (variant, step, capability) list on the steps page."""
    return anchor("flips", variant, step, capability)


def _link_svg(path: Path) -> None:
    """Make the figure's point links open in the page that embeds the SVG (matplotlib opens a new window)."""
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r'(<a xlink:href="[^"]*") target="_blank"', r'\1 target="_top"', text), encoding="utf-8")


def _grid(keys: Sequence[str]) -> tuple[Any, Any, Any]:
    plt = _pyplot()
    cols = min(4, max(1, len(keys)))
    rows = math.ceil(len(keys) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.3 * cols, 2.9 * rows), squeeze=False, sharex=True)
    for ax in axes.ravel()[:len(keys)]:  # sharex hides the ticks of panels above another: each panel keeps its own
        ax.tick_params(axis="x", labelbottom=True)
        ax.set_xlabel("training step", fontsize=8)
    for ax in axes.ravel()[len(keys):]:
        ax.axis("off")
    fig.subplots_adjust(hspace=0.55)  # room for the label above the next row's titles
    return plt, fig, axes.ravel()


def curve_figures(curves: pd.DataFrame, out: Path, steps_href: str | None = None) -> list[Path]:
    """Write the two figures (PNG and SVG) into `out`; none when no capability row exists.

    With `steps_href` (the steps page as seen from `out`), each point of the drift SVG links to the items
    that flipped at that step."""
    caps = curves[curves["level"] == "capability"]
    keys = list(dict.fromkeys(caps["key"]))
    if not keys:
        return []
    colors = algorithm_colors([a or "(none)" for a in caps["algorithm"]])
    value, low, high, unit = _measure(caps)
    _, fig, axes = _grid(keys)
    for ax, key in zip(axes, keys, strict=False):
        rows = caps[caps["key"] == key].sort_values("step")
        mde = _mde_band(rows, unit)
        if not math.isnan(mde):
            ax.axhspan(-mde, mde, color="#dddddd", alpha=0.6, linewidth=0)
        ax.axhline(0, color="#777777", linewidth=0.8)
        for (variant, algorithm), line in rows.groupby(["variant", "algorithm"], sort=True):
            color = colors[str(algorithm) or "(none)"]
            steps, shown, lo, hi = _from_step_zero(line["step"], line[value], line[low], line[high])
            ax.fill_between(steps, lo, hi, color=color, alpha=0.18, linewidth=0)
            ax.plot(steps, shown, color=color, label=f"{variant} ({algorithm or '-'})")
            ax.scatter([steps[0]], [shown[0]], s=14, facecolors="white", edgecolors=color, zorder=3)  # step 0: the base
            points = ax.scatter(line["step"], line[value], s=12, color=color, zorder=3)
            if steps_href is not None:
                points.set_urls([f"{steps_href}#{flip_anchor(str(variant), int(s), str(key))}" for s in line["step"]])
        ax.set_title(str(key), loc="left", fontsize=9)
    axes[0].set_ylabel("Δ vs base, + better (points)" if unit == "points" else "drift, % of base (CapTrack-compatible)")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle(f"Change over training per capability ({unit}; step 0, hollow: the base; band: 95% CI; grey: MDE)",
                 x=0.01, y=1.03, ha="left")
    written = _save(fig, out, DRIFT_FIGURE)
    if steps_href is not None:
        _link_svg(out / f"{DRIFT_FIGURE}.svg")
    _, fig, axes = _grid(keys)
    for ax, key in zip(axes, keys, strict=False):
        rows = caps[caps["key"] == key].sort_values("step")
        for (variant, algorithm), line in rows.groupby(["variant", "algorithm"], sort=True):
            color = colors[str(algorithm) or "(none)"]
            steps, forgot, gained, _ = _from_step_zero(line["step"], 100 * line["forgetting_adj"],
                                                       100 * line["backward_transfer_adj"], line["step"])
            ax.plot(steps, forgot, marker="o", markersize=3, color=color, label=f"{variant} F_adj")
            ax.plot(steps, gained, marker="s", markersize=3, color=color, linestyle="--", label=f"{variant} BT_adj")
        ax.set_title(str(key), loc="left", fontsize=9)
    axes[0].set_ylabel("% of items")
    axes[0].legend(fontsize=7, frameon=False)
    fig.suptitle("Chance-adjusted forgetting (solid) and backward transfer (dashed) over training", x=0.01, y=1.03,
                 ha="left")
    return written + _save(fig, out, RATES_FIGURE)


def _measure(caps: pd.DataFrame) -> tuple[str, str, str, str]:
    """The columns the drift figure draws: the verdicts' change Δ in points with its 95% CI where curves.csv has
    them, else (an older file) relative drift in % of base."""
    if "oriented_change" in caps and caps["oriented_change"].notna().any():
        return "oriented_change", "change_ci_low", "change_ci_high", "points"
    return "drift_pct", "ci_low", "ci_high", "% of base"


def _mde_band(rows: pd.DataFrame, unit: str) -> float:
    """The grey band's half-width: the largest MDE of the capability's steps, in the figure's unit (an MDE in % of
    base times the base value, for points; NaN without one)."""
    mde = rows["mde_pct"] * (rows["base_value"] if unit == "points" else 1.0)
    return float(mde.max()) if mde.notna().any() else math.nan


def _from_step_zero(steps: pd.Series, *columns: pd.Series) -> tuple[list[float], ...]:
    """`steps` and `columns` with step 0 first, where every column is 0 (the base compared with itself), unless the
    trajectory already has a step 0."""
    found = [[float(x) for x in c] for c in (steps, *columns)]
    if not found[0] or min(found[0]) <= 0:
        return tuple(found)
    return tuple([0.0, *c] for c in found)


def _trend_unit(summary: pd.DataFrame) -> int:
    """Steps per trend unit: the power of ten at the scale of the longest trajectory (16 steps: per 10 steps;
    5,000 steps: per 1,000), so a slope is never stated over a span the training did not run."""
    last = pd.to_numeric(summary["final_step"], errors="coerce").max() if len(summary) else math.nan
    return 10 ** math.floor(math.log10(last)) if last and not pd.isna(last) and last >= 1 else 1


def _summary_cells(row: Any, unit: int) -> list[str]:
    first = "not yet" if pd.isna(row.first_step_significant) else f"{int(row.first_step_significant)}"
    first += f" (K = {int(row.n_steps)})"  # the steps the window scan controls over (analysis.curve_windows)
    trend = "n/a" if pd.isna(row.trend_pct_per_step) else (
        f"{unit * row.trend_pct_per_step:+.2f} [{unit * row.trend_ci_low:+.2f}, {unit * row.trend_ci_high:+.2f}]"
        if not pd.isna(row.trend_ci_low) else f"{unit * row.trend_pct_per_step:+.2f}")
    final = "n/a" if pd.isna(row.final_drift_pct) else f"{signed(row.final_drift_pct, suffix='%')} at {int(row.final_step)}"
    return [str(row.variant), str(row.algorithm), str(row.capability), first, final, trend,
            str(int(row.forgotten_regained)), str(int(row.gained_lost))]


def _header(unit: int) -> list[str]:
    return ["variant", "algorithm", "capability", "first significant step (max-T over windows of its K steps)",
            "final relative drift (% of base, CapTrack-compatible)",
            f"trend, relative drift % of base per {unit:,} step{'s' if unit > 1 else ''} [95% CI]", "forgotten → regained",
            "gained → lost"]


def _figure_html(path: Path, prefix: str) -> str:
    src = esc(prefix + path.name)
    if path.stem == DRIFT_FIGURE:  # an object, not an img, so that its points' links can be followed
        return (f'<p><object data="{src}" type="image/svg+xml" style="max-width:100%" aria-label="{esc(path.stem)}">'
                f'<img src="{src}" alt="{esc(path.stem)}" style="max-width:100%"></object></p>')
    return f'<p><img src="{src}" alt="{esc(path.stem)}" style="max-width:100%"></p>'


def _points(curves: pd.DataFrame) -> pd.DataFrame:
    """The (variant, algorithm, capability, step) points of the drift figure, each with the point before it
    ("base" before the first)."""
    caps = curves[curves["level"] == "capability"][["variant", "algorithm", "key", "step"]].drop_duplicates()
    caps = caps.sort_values(["variant", "key", "step"], kind="stable", ignore_index=True)
    since = caps.groupby(["variant", "key"], sort=False)["step"].shift(1)
    return caps.assign(since=["base" if pd.isna(s) else str(int(s)) for s in since])


def _flip_counts_html(curves: pd.DataFrame, flips: pd.DataFrame, steps_href: str) -> str:
    """Per (variant, capability) and step: forgotten / gained, each linking to its list on the steps page."""
    points = _points(curves)
    if points.empty:
        return ""
    steps = sorted({int(s) for s in points["step"]})
    rows = []
    for (variant, capability), frame in points.groupby(["variant", "key"], sort=True):
        cells = [f"<td>{esc(variant)}</td>", f"<td>{esc(capability)}</td>"]
        measured = {int(s) for s in frame["step"]}
        for step in steps:
            if step not in measured:
                cells.append("<td>-</td>")
                continue
            at = flips[(flips["variant"] == variant) & (flips["capability"] == capability) & (flips["step"] == step)]
            lost, gained = int((at["change"] == "forgotten").sum()), int((at["change"] == "gained").sum())
            href = f"{steps_href}#{flip_anchor(str(variant), step, str(capability))}"
            cells.append(f'<td><a href="{esc(href)}">{lost} / {gained}</a></td>')
        rows.append(cells)
    return (f'<h3 id="flips-per-step">Flipped items per step (forgotten / gained)</h3><p>{esc(FLIPS_INTRO)}</p>'
            + table(["variant", "capability", *[f"step {s}" for s in steps]], rows, "flips-per-step-table"))


def over_training_html(summary: pd.DataFrame, figures: Sequence[Path], prefix: str = "figures/",
                       curves: pd.DataFrame | None = None, flips: pd.DataFrame | None = None) -> str:
    """The "Over training" section of a leaderboard page (with `curves` and `flips`, links to the steps page)."""
    images = "".join(_figure_html(p, prefix) for p in figures if p.suffix == ".svg")
    unit = _trend_unit(summary)
    rows = [[f"<td>{esc(c)}</td>" for c in _summary_cells(r, unit)] for r in summary.itertuples()]
    counts = _flip_counts_html(curves, flips, STEPS_PAGE) if curves is not None and flips is not None else ""
    return (f'<h2 id="over-training">Over training</h2><p>{esc(INTRO)}</p>{images}'
            + table(_header(unit), rows, "over-training-table") + counts)


def _task_cell(task: str, task_pages: Collection[str]) -> str:
    name = task_page_name(task)
    return f'<a href="tasks/{esc(name)}">{esc(task)}</a>' if name in task_pages else esc(task)


def _churn_html(churn: pd.DataFrame, task_pages: Collection[str]) -> str:
    """The items that flip-flopped (curve_items.csv), each step linking to the flips listed at it."""
    header = ["variant", "task", "metric", "doc", "doc hash", "pattern", "first step", "later step"]
    rows = []
    for r in churn.itertuples():
        capability = "" if pd.isna(r.capability) else str(r.capability)
        steps = [f'<td><a href="#{esc(flip_anchor(str(r.variant), int(s), capability))}">{int(s)}</a></td>'
                 if capability else f"<td>{int(s)}</td>" for s in (r.first_step, r.later_step)]
        rows.append([f"<td>{esc(r.variant)}</td>", f"<td>{_task_cell(str(r.task), task_pages)}</td>",
                     f"<td>{esc(r.metric)}</td>", f"<td>{int(r.doc_id)}</td>",
                     f"<td><code>{esc(str(r.doc_hash)[:12])}</code></td>", f"<td>{esc(r.pattern)}</td>", *steps])
    intro = ("Items forgotten at a step and right again at a later one (forgotten_regained), and gained then lost "
             "(gained_lost); the steps link to the lists above.")
    return (f'<h2 id="churn">Items that flip-flopped over training ({len(rows)})</h2><p>{esc(intro)}</p>'
            + (table(header, rows, "churn-items") if rows else ""))


def _with_capability(churn: pd.DataFrame, flips: pd.DataFrame) -> pd.DataFrame:
    """curve_items rows with the (first) capability their task is listed under on the steps page ("" for none)."""
    listed = flips[flips["capability"] != ""]
    caps = listed.drop_duplicates(["variant", "task", "metric"])[["variant", "task", "metric", "capability"]]
    return churn.merge(caps, on=["variant", "task", "metric"], how="left", sort=False)


def steps_page(curves: pd.DataFrame, flips: pd.DataFrame, title: str, task_pages: Collection[str] = (),
               churn: pd.DataFrame | None = None, texts: Mapping[FlipKey, StepTexts] | None = None) -> str:
    """The steps page: for every point of the drift figure (variant, step, capability), the items that flipped
    there, then the items that flip-flopped (`churn`, curve_items.csv) (task_pages: the board's drill-down
    pages, linked where a task has one; `texts`: each flipped item's question and answers before and at the step,
    captrack.report.step_texts, shown in a column of their own)."""
    parts = [f"<h1>Items that flipped at each step — {esc(title)}</h1>", f"<p>{esc(FLIPS_INTRO)}</p>"]
    header = ["task", "metric", "doc", "doc hash", "change", *(["question, answer before → at the step"] if texts is not None else [])]
    for point in _points(curves).itertuples():
        step, capability = int(point.step), str(point.key)
        frame = flips[(flips["variant"] == point.variant) & (flips["step"] == step) & (flips["capability"] == capability)]
        anchor = flip_anchor(str(point.variant), step, capability)
        since = "the base" if point.since == "base" else f"step {point.since}"
        heading = (f'<h2 id="{esc(anchor)}">{esc(point.variant)} ({esc(point.algorithm or "-")}), step {step}, '
                   f"{esc(capability)}: {len(frame)} flipped since {esc(since)}</h2>")
        rows = []
        for r in frame.itertuples():
            rows.append([f"<td>{_task_cell(str(r.task), task_pages)}</td>", f"<td>{esc(r.metric)}</td>", f"<td>{int(r.doc_id)}</td>",
                         f"<td><code>{esc(str(r.doc_hash)[:12])}</code></td>", f"<td>{esc(r.change)}</td>",
                         *([flip_text_cell(texts.get((str(r.variant), step, str(r.task), int(r.doc_id))), step)]
                           if texts is not None else [])])
        parts.append(heading + (table(header, rows, anchor + "-items") if rows else ""))
    if churn is not None:
        parts.append(_churn_html(_with_capability(churn, flips), task_pages))
    nav = '<nav><a href="index.html#over-training">&larr; leaderboard, over training</a></nav>'
    return page(f"Items flipped per step — {title}", "".join(parts), nav, wide=True)


def over_training_markdown(summary: pd.DataFrame, figures: Sequence[Path], prefix: str = "figures/",
                           with_steps_page: bool = False) -> str:
    """The "Over training" section of report.md / a board's README.md."""
    lines = ["## Over training", "", md_text(INTRO, table=False), ""]
    lines += [f"![{p.stem}]({prefix}{p.name})" for p in figures if p.suffix == ".png"]
    unit = _trend_unit(summary)
    header = _header(unit)
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_text(c) for c in _summary_cells(r, unit)) + " |" for r in summary.itertuples()]
    lines += ["", "The items that flipped at each step (against the step before it): step_flips.csv"
              + (f" and [{STEPS_PAGE}]({STEPS_PAGE})." if with_steps_page else ".")]
    return "\n".join(lines) + "\n"


def over_training_tables(curves: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """curves.csv, curve_summary.csv and curve_items.csv of every trajectory (captrack.analysis.curves.Curves);
    {} when no variant is a trajectory."""
    if not curves:
        return {}
    return {name: pd.concat([getattr(c, attr) for c in curves], ignore_index=True) for name, attr in
            (("curves.csv", "curves"), ("curve_summary.csv", "summary"), ("curve_items.csv", "churn_items"),
             ("step_flips.csv", "step_flips"))}


def over_training_sections(tables: dict[str, pd.DataFrame], figures_dir: Path, prefix: str = "figures/",
                           steps_href: str | None = None) -> tuple[str, str, list[Path]]:
    """(HTML, Markdown, figures written) of the "Over training" section; empty without trajectories.

    `steps_href`: the steps page as seen from `figures_dir` (a board writes one); the drift figure's points
    and the flip counts then link to it."""
    if not tables:
        return "", "", []
    figures = curve_figures(tables["curves.csv"], figures_dir, steps_href)
    summary = tables["curve_summary.csv"]
    flips = tables["step_flips.csv"] if steps_href is not None else None
    return (over_training_html(summary, figures, prefix, tables["curves.csv"], flips),
            over_training_markdown(summary, figures, prefix, with_steps_page=flips is not None), figures)
