"""Write a leaderboard folder: index.html, task drill-down pages, README.md, CSVs and figures."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from captrack.analysis.compare import Comparison
from captrack.files import write_atomic
from captrack.report import figures
from captrack.report.board_tables import algorithm_summary, checkpoint_rows
from captrack.report.escape import md_text
from captrack.report.figures import VERDICT_MARKS
from captrack.report.findings import findings, target_sentences, verdict_sentences
from captrack.report.html import esc, page, table
from captrack.report.over_training import (
    STEPS_PAGE,
    over_training_sections,
    over_training_tables,
    steps_page,
)
from captrack.report.power_section import power_sections
from captrack.report.verdict_cells import VERDICT_NOTE, group_side, oriented_task, verdict_td
from captrack.report.writer import write_contract_tables
from captrack.taxonomy import load_taxonomy

if TYPE_CHECKING:
    from captrack.report.board_spec import LeaderboardSpec, VariantLabels

__all__ = ["AGGREGATE_NOTE", "write_pages"]


def _num(value: float, pct: bool = True, signed: bool = True, oriented: float | None = None) -> str:
    """A number cell; signed cells are coloured by `oriented` (+ better: blue, − worse: red) where given,
    uncoloured where the metric has no better side (oriented NaN), else by the value's own sign."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<td class="num" data-sort="">n/a</td>'
    side = value if oriented is None else (0.0 if math.isnan(oriented) else oriented)
    cls = ("pos" if side > 0 else "neg" if side < 0 else "") if signed else ""
    text = (f"{value:+.1f}" if signed else f"{value:.1f}") + ("%" if pct else "")
    return f'<td class="num {cls}" data-sort="{value:.6g}">{esc(text)}</td>'


def _td(value: object) -> str:
    return f"<td>{esc(value)}</td>"


def _tables(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[str, pd.DataFrame]:
    labels = {name: lab for _, labs in comparisons for name, lab in labs.items()}
    label_frame = pd.DataFrame([{"variant": n, "base": v.base, "family": v.family, "size": v.size,
                                 "data": v.data, "label_algorithm": v.algorithm} for n, v in labels.items()])
    caps = pd.concat([c.capabilities for c, _ in comparisons], ignore_index=True).merge(label_frame, on="variant")
    caps["algorithm"] = caps["label_algorithm"].where(caps["label_algorithm"] != "", caps["algorithm"])
    caps = caps.drop(columns="label_algorithm")
    drift = pd.concat([c.drift for c, _ in comparisons], ignore_index=True)
    trans = pd.concat([c.transitions for c, _ in comparisons], ignore_index=True)
    power = pd.concat([c.power for c, _ in comparisons], ignore_index=True)
    contrasts = pd.concat([c.contrasts for c, _ in comparisons], ignore_index=True)
    return {"capabilities": caps, "drift": drift, "transitions": trans, "labels": label_frame, "power": power,
            "contrasts": contrasts}


def _heatmap_data(caps: pd.DataFrame, variants: list[str], keys: tuple[str, ...]
                  ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Raw drift (printed), oriented drift (the colour), CI-excludes-0 marks and verdicts, per row label and variant."""
    taxonomy = load_taxonomy()
    rows: list[tuple[str, str, str]] = []
    for group in taxonomy.groups:
        rows.append(("group", group.key, f"{group.key} (mean)"))
        rows += [("capability", c.key, f"{c.key} {c.name}") for c in group.capabilities]
    shown = caps[caps["n_metrics"] > 0]
    present = set(zip(shown["level"], shown["key"], strict=True))
    rows = [r for r in rows if (r[0], r[1]) in present and (not keys or r[1] in keys or r[0] == "group")]
    labels, columns = [r[2] for r in rows], {v: j for j, v in enumerate(variants)}
    printed = np.full((len(rows), len(variants)), np.nan)
    shade, marked = printed.copy(), np.zeros(printed.shape, dtype=bool)
    said = np.full(printed.shape, "", dtype=object)
    at = {(level, key): i for i, (level, key, _) in enumerate(rows)}
    oriented = caps["oriented_drift_pct"] if "oriented_drift_pct" in caps else caps["mean_rel_drift_pct"]
    verdict = caps["verdict"] if "verdict" in caps else pd.Series(None, index=caps.index, dtype=object)
    for level, key, variant, mean, colour, low, high, found in zip(
            caps["level"], caps["key"], caps["variant"], caps["mean_rel_drift_pct"], oriented, caps["ci_low"],
            caps["ci_high"], verdict, strict=True):
        i, j = at.get((level, key)), columns.get(variant)
        if i is None or j is None:
            continue
        printed[i, j], shade[i, j], marked[i, j] = mean, colour, bool(low > 0 or high < 0)
        said[i, j] = found if isinstance(found, str) else ""
    matrix = pd.DataFrame(printed, index=labels, columns=variants, dtype=float)
    colors = pd.DataFrame(shade, index=labels, columns=variants, dtype=float)
    marks = pd.DataFrame(marked, index=labels, columns=variants)
    verdicts = pd.DataFrame(said, index=labels, columns=variants, dtype=object)
    return matrix, colors, marks, verdicts


@dataclass(frozen=True)
class Board:
    """Everything the index page and README of a leaderboard show."""

    spec: LeaderboardSpec
    matrix: pd.DataFrame
    summary: pd.DataFrame
    checkpoints: pd.DataFrame
    capabilities: pd.DataFrame
    per_task: pd.DataFrame
    scoring: pd.DataFrame
    said: list[str]
    aggregate_only: bool
    html_sections: list[str] = field(default_factory=list)  # extra sections (base → variant pairs, per-field tables)
    md_sections: list[str] = field(default_factory=list)
    oriented: pd.DataFrame = field(default_factory=pd.DataFrame)  # like matrix: the colour side (+ better)
    verdicts: pd.DataFrame = field(default_factory=pd.DataFrame)  # like matrix: each cell's verdict


AGGREGATE_NOTE = ("Aggregate scores only: this source has no per-item data, so no confidence intervals, no item "
                  "transitions (F/BT), no minimum detectable effects, no ranking of algorithms and no drill-down can be "
                  "computed. None of these drifts can be told apart from noise: every number is a point estimate of unknown precision.")
NOISE_NOTE = ("A drift is beyond noise (marked *) only where its 95% paired bootstrap CI exists and excludes 0. "
              "MDE: the smallest relative drift the items detect with 80% power (two-sided α = 0.05, paired; "
              "planned from n and the base rate). Drift is the relative change of a metric's value, so \"rose\" and \"fell\" "
              "say which way the value moved: for a lower-is-better metric (W2's overreach, for one) a rise is a change for "
              "the worse; drift.csv's oriented_drift_pct gives every metric's change with + meaning better.")


def _per_task(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per variant, task and metric: base, variant, n, drift, CI and MDE (n and MDE NaN without items)."""
    drift = tables["drift"].drop_duplicates(["variant", "task", "metric"])
    power = tables["power"][["variant", "task", "metric", "n", "mde_pct"]]
    merged = drift.merge(power, on=["variant", "task", "metric"], how="left")
    columns = ["variant", "task", "metric", "base_value", "variant_value", "n", "rel_drift_pct", "ci_low", "ci_high", "mde_pct",
               "direction", "verdict", "oriented_change", "change_ci_low", "change_ci_high"]
    return merged.reindex(columns=columns).sort_values(["variant", "task", "metric"]).reset_index(drop=True)


def _capability_rows(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Capability rows with the paired items behind each (summed over member tasks; NaN without items)."""
    caps = tables["capabilities"]
    caps = caps[(caps["level"] == "capability") & (caps["n_metrics"] > 0)]
    drift = tables["drift"][tables["drift"]["rel_drift_pct"].notna()].merge(
        tables["power"][["variant", "task", "metric", "n"]], on=["variant", "task", "metric"], how="left")
    # each member task's items once (its first metric's n), summed per (variant, capability)
    first = drift.drop_duplicates(["variant", "capability", "task"])
    sums = first.assign(n=pd.to_numeric(first["n"], errors="coerce").astype(float)).groupby(
        ["variant", "capability"])["n"].sum(min_count=1)
    items = {(str(v), str(c)): float(n) for (v, c), n in sums.items() if c}
    return caps.assign(items=[items.get((str(v), str(k)), math.nan) for v, k in zip(caps["variant"], caps["key"], strict=True)])


def write_pages(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> list[Path]:
    """Write every output of the leaderboard into ``spec.folder``; returns the paths."""
    from captrack.report.drilldown import scoring_table, task_pages

    folder = spec.folder
    tables = _tables(comparisons)
    aggregate_only = all(c.aggregate_only for c, _ in comparisons)
    variants = [v.name for c, _ in comparisons for v in c.variants]
    colors = figures.algorithm_colors([a or "(none)" for a in tables["capabilities"]["algorithm"]])
    matrix, oriented, marks, verdicts = _heatmap_data(tables["capabilities"], variants, spec.capabilities)
    summary = algorithm_summary(tables["capabilities"], aggregate_only)
    checkpoints = checkpoint_rows(tables, variants)
    written = figures.heatmap_figure(matrix, marks, folder / "figures", with_cis=not aggregate_only, colors=oriented,
                                     verdicts=verdicts)
    if not summary.empty:
        written += figures.algorithm_summary_figure(summary, colors, folder / "figures")
    points = checkpoints.dropna(subset=["forgetting_adj"]).assign(algorithm=lambda f: f["algorithm"].replace("", "(none)"))
    if not points.empty:
        written += figures.f_vs_bt_figure(points, colors, folder / "figures")
    csvs = {"transitions.csv": tables["transitions"], "drift.csv": tables["drift"], "capabilities.csv": tables["capabilities"],
            "checkpoints.csv": checkpoints, "algorithms.csv": summary}
    if not aggregate_only:
        csvs |= {"power.csv": tables["power"], "rankings.csv": tables["contrasts"]}
    over = over_training_tables([c.curves for c, _ in comparisons if c.curves is not None])  # drift over training
    written += write_contract_tables(folder, csvs | over)
    extra_tables, html_sections, md_sections = _pair_sections(spec, comparisons)
    over_html, over_md, over_figures = over_training_sections(over, folder / "figures", steps_href=f"../{STEPS_PAGE}")
    if over_html:  # boards without trajectories stay byte for byte as they were
        html_sections, md_sections, written = [over_html, *html_sections], [over_md, *md_sections], written + over_figures
    if not aggregate_only:
        power_html, power_md = power_sections(tables["drift"], tables["power"])
        html_sections, md_sections = [power_html, *html_sections], [power_md, *md_sections]
    written += write_contract_tables(folder, extra_tables)
    scoring = scoring_table(spec, comparisons)
    pages = task_pages(spec, comparisons, tables["transitions"], scoring) if spec.store is not None else {}
    for name, text in pages.items():
        (folder / "tasks").mkdir(exist_ok=True)
        written.append(write_atomic(folder / "tasks" / name, text))
    if over:
        written.append(write_atomic(folder / STEPS_PAGE, steps_page(over["curves.csv"], over["step_flips.csv"], spec.title, pages,
                                                                      over["curve_items.csv"])))
    elif (folder / STEPS_PAGE).exists():  # no trajectory on the board any more
        (folder / STEPS_PAGE).unlink()
    for stale in sorted((folder / "tasks").glob("*.html")) if (folder / "tasks").is_dir() else []:
        if stale.name not in pages:  # a task no longer on the board: its old page would mislead
            stale.unlink()
    said = findings(tables["capabilities"], checkpoints, tables["contrasts"], aggregate_only)
    said += target_sentences(tables["drift"], spec.target) if spec.target else []
    said += [] if aggregate_only else verdict_sentences(tables["capabilities"], spec.margin)
    board = Board(spec, matrix, summary, checkpoints, _capability_rows(tables), _per_task(tables), scoring, said, aggregate_only,
                  html_sections, md_sections, oriented, verdicts)
    written.append(write_atomic(folder / "index.html", _index(board, sorted(pages), {p.name for p in written})))
    written.append(write_atomic(folder / "README.md", _readme(board)))
    return written


def _pair_sections(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]
                   ) -> tuple[dict[str, pd.DataFrame], list[str], list[str]]:
    """pairs.csv (when there are transitions) and by_<field>.csv, with their HTML and README sections."""
    from captrack.analysis.by_field import by_field_file
    from captrack.report.pair_tables import (
        by_field_html,
        by_field_markdown,
        pair_table,
        pairs_html,
        pairs_markdown,
    )

    tables: dict[str, pd.DataFrame] = {}
    html: list[str] = []
    md: list[str] = []
    pairs = pair_table(comparisons)
    if not pairs.empty:
        tables["pairs.csv"] = pairs
        html.append(pairs_html(pairs))
        md += pairs_markdown(pairs)
    for name in spec.by:
        frames = [c.by_field[name] for c, _ in comparisons if name in c.by_field]
        if frames:
            frame = pd.concat(frames, ignore_index=True)
            tables[by_field_file(name)] = frame
            html.append(by_field_html(name, frame, by_field_file(name)))
            md += by_field_markdown(name, frame)
    return tables, html, md


def _ci_cells(low: float, high: float) -> str:
    from captrack.report.markdown import ZERO_WIDTH, zero_width

    if zero_width(low, high):  # never "+0.0%  +0.0%", which reads as certainty
        said = f'title="{esc(ZERO_WIDTH)}"'
        return (f'<td class="num muted" data-sort="{low:.6g}" {said}>&mdash;</td>'
                f'<td class="num muted" data-sort="{high:.6g}" {said}>no item changed</td>')
    return _num(low) + _num(high)


def _ci_text(low: float, high: float, fmt: Any) -> str:
    """A CI in Markdown: "[low, high]", or what a width of 0 means."""
    from captrack.report.markdown import ZERO_WIDTH, zero_width

    return f"({ZERO_WIDTH})" if zero_width(low, high) else f"[{fmt(low)}, {fmt(high)}]"


def _index(board: Board, task_pages: list[str], names: set[str]) -> str:
    spec = board.spec
    parts = [f"<h1>{esc(spec.title)}</h1>", f"<p>{esc(spec.description)}</p>"]
    if spec.source_note:
        parts.append(f'<p class="note">Source: {esc(spec.source_note)}</p>')
    parts.append(f'<p class="note" id="precision">{esc(AGGREGATE_NOTE if board.aggregate_only else NOISE_NOTE)}</p>')
    if board.said:
        parts.append('<h2 id="findings">What drifted</h2><ul id="findings-list">'
                     + "".join(f"<li>{esc(s)}</li>" for s in board.said) + "</ul>")
    parts.append('<h2 id="heatmap">Capability drift</h2><figure><img src="figures/heatmap.png" alt="capability drift heatmap" width="900"></figure>')
    header = ["capability", *board.matrix.columns]
    rows = []
    for label in board.matrix.index:
        side = board.oriented.loc[label] if label in board.oriented.index else board.matrix.loc[label]
        rows.append([_td(label), *(_num(v, oriented=o) for v, o in zip(board.matrix.loc[label], side, strict=True))])
    parts.append(table(header, rows, "capability-table"))
    parts += _detail_tables(board)
    if "algorithms.png" in names:
        parts.append('<h2 id="algorithms">By post-training algorithm</h2><figure><img src="figures/algorithms.png" alt="drift by algorithm" width="700"></figure>')
        rows = [[_td(r.algorithm), _td(r.key), f'<td class="num">{r.n_variants}</td>',
                 _num(r.mean_rel_drift_pct, oriented=r.oriented_drift_pct),
                 _ci_cells(r.ci_low, r.ci_high), _num(100 * r.forgetting, signed=False), _num(100 * r.backward_transfer, signed=False)]
                for r in board.summary.itertuples()]
        parts.append(table(["algorithm", "capability", "variants", "mean drift", "CI low", "CI high", "F", "BT"], rows, "algorithm-table"))
    if "f_vs_bt.png" in names:
        parts.append('<h2 id="f-bt">Forgetting vs backward transfer</h2><figure><img src="figures/f_vs_bt.png" alt="forgetting vs backward transfer" width="560"></figure>')
    rows = [[_td(r.variant), _td(r.base), _td(r.family), _td(r.size), _td(r.algorithm), _td(r.data),
             *(_num(getattr(r, g), oriented=group_side(board.oriented, g, r.variant)) for g in ("CAN", "WILL", "HOW")),
             _num(100 * r.forgetting_adj, signed=False),
             _num(100 * r.backward_transfer_adj, signed=False),
             f'<td class="num">{f"{r.significant_tasks} / {r.tasks}" if r.tasks else "n/a"}</td>']
            for r in board.checkpoints.itertuples()]
    parts.append('<h2 id="checkpoints">Checkpoints</h2><p class="muted">Click a column header to sort.</p>')
    parts.append(table(["variant", "base", "family", "size", "algorithm", "data", "CAN", "WILL", "HOW", "F_adj",
                        "BT_adj", "significant tasks"], rows, "checkpoint-table"))
    parts.append(_scoring_html(board))
    parts += board.html_sections
    if task_pages:
        links = "".join(f'<li><a href="tasks/{esc(p)}">{esc(p.removesuffix(".html"))}</a></li>' for p in task_pages)
        parts.append(f'<h2 id="tasks">Forgotten and gained items, per task</h2><ul>{links}</ul>')
    extra = "" if board.aggregate_only else ", power.csv, rankings.csv"
    parts.append(f'<p class="muted">Data: capabilities.csv, drift.csv, transitions.csv, checkpoints.csv, algorithms.csv{extra}. '
                 'Generated by captrack.</p>')
    return page(spec.title, "\n".join(parts))


def _scoring_html(board: Board) -> str:
    if board.aggregate_only or board.scoring.empty:
        return ('<h2 id="scoring">How each metric was scored</h2><p id="scoring-note">By the source, as published: '
                "captrack holds only its aggregate values, with no record of each item's scoring.</p>")
    rows = [[_td(r.task), _td(r.metric), _td(r.scored_by)] for r in board.scoring.itertuples()]
    return '<h2 id="scoring">How each metric was scored</h2>' + table(["task", "metric", "scored by"], rows, "scoring-table")


def _detail_tables(board: Board) -> list[str]:
    """Capability and per-task drift with CI, MDE and item counts (aggregate-only: base, variant and drift only)."""
    caps, tasks = board.capabilities, board.per_task
    if board.aggregate_only:
        rows = [[_td(r.variant), _td(r.key), _num(r.mean_rel_drift_pct), f'<td class="num">{int(r.n_metrics)}</td>']
                for r in caps.itertuples()]
        task_rows = [[_td(r.variant), _td(r.task), _td(r.metric), f'<td class="num">{r.base_value:.4g}</td>',
                      f'<td class="num">{r.variant_value:.4g}</td>', '<td class="num">n/a</td>', _num(r.rel_drift_pct)]
                     for r in tasks.itertuples()]
        return ['<h2 id="capability-details">Per capability</h2>', table(["variant", "capability", "drift", "metrics"], rows, "capability-details"),
                '<h2 id="per-task">Per task: base, variant, n</h2>',
                table(["variant", "task", "metric", "base", "variant score", "n", "drift"], task_rows, "task-table")]
    rows = [[_td(r.variant), _td(r.key), _num(r.mean_rel_drift_pct, oriented=r.oriented_drift_pct),
             _ci_cells(r.ci_low, r.ci_high), _td(_mark(r.ci_low, r.ci_high)), verdict_td(r.verdict),
             _num(r.oriented_change, pct=False, oriented=r.oriented_change),
             _num(r.mde_pct, signed=False), f'<td class="num">{int(r.n_metrics)}</td>', _count(r.items)] for r in caps.itertuples()]
    task_rows = [[_td(r.variant), _td(r.task), _td(r.metric), f'<td class="num">{r.base_value:.4g}</td>',
                  f'<td class="num">{r.variant_value:.4g}</td>', _count(r.n),
                  _num(r.rel_drift_pct, oriented=oriented_task(r.direction, r.rel_drift_pct)), _ci_cells(r.ci_low, r.ci_high),
                  _td(_mark(r.ci_low, r.ci_high)), verdict_td(r.verdict),
                  _num(r.oriented_change, pct=False, oriented=r.oriented_change if r.direction != "neutral" else math.nan),
                  _num(r.mde_pct, signed=False)] for r in tasks.itertuples()]
    return ['<h2 id="capability-details">Per capability</h2>',
            f'<p class="muted">{esc(VERDICT_NOTE)}</p>',
            table(["variant", "capability", "drift", "CI low", "CI high", "*", "verdict", "Δ (+ better)", "MDE", "metrics",
                   "items"], rows, "capability-details"),
            '<h2 id="per-task">Per task: base, variant, n</h2>',
            table(["variant", "task", "metric", "base", "variant score", "n", "drift", "CI low", "CI high", "*", "verdict",
                   "Δ (+ better)", "MDE"], task_rows, "task-table")]


def _mark(low: float, high: float) -> str:
    """``*`` where a CI exists and excludes 0."""
    return "*" if not (math.isnan(low) or math.isnan(high)) and (low > 0 or high < 0) else ""


def _count(value: float) -> str:
    return '<td class="num">n/a</td>' if value is None or math.isnan(value) else f'<td class="num">{int(value)}</td>'


def _readme(board: Board) -> str:
    def fmt(v: float, signed: bool = True) -> str:
        return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else (f"{v:+.1f}%" if signed else f"{v:.1f}%")

    spec, matrix = board.spec, board.matrix
    lines = [f"# {md_text(spec.title, table=False)}", "", spec.description, ""]  # description and note: the author's Markdown
    if spec.source_note:
        lines += [f"Source: {spec.source_note}", ""]
    lines += [AGGREGATE_NOTE if board.aggregate_only else NOISE_NOTE, ""]
    if board.said:
        lines += ["## What drifted", "", *(f"- {md_text(s, table=False)}" for s in board.said), ""]
    lines += ["![capability drift](figures/heatmap.png)", "", "## Capability drift (%; relative to each variant's base)", ""]
    verdicts = board.verdicts if not board.verdicts.empty else pd.DataFrame("", index=matrix.index, columns=matrix.columns)
    if not board.aggregate_only:
        lines += [f"Each cell: the raw drift, then the verdict at margin ±{spec.margin:g} (▼ regressed, ▲ improved, "
                  "≈ equivalent, ? inconclusive, • changed; see index.html's Per capability and README's Definitions).", ""]
    lines += ["| capability | " + " | ".join(md_text(c) for c in matrix.columns) + " |", "|---" * (len(matrix.columns) + 1) + "|"]
    lines += [f"| {md_text(label)} | " + " | ".join(
        (fmt(v) + (f" {VERDICT_MARKS[str(m)]} {m}" if str(m) in VERDICT_MARKS else "")).strip()
        for v, m in zip(matrix.loc[label], verdicts.loc[label], strict=True)) + " |" for label in matrix.index]
    lines += ["", "## Per task", ""]
    if board.aggregate_only:
        lines += ["| variant | task | metric | base | variant score | n | drift |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {md_text(r.variant)} | {md_text(r.task)} | {md_text(r.metric)} | {r.base_value:.4g} | {r.variant_value:.4g} | n/a | {fmt(r.rel_drift_pct)} |"
                  for r in board.per_task.itertuples()]
    else:
        lines += ["| variant | task | metric | base | variant score | n | drift | 95% CI | MDE | verdict |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {md_text(r.variant)} | {md_text(r.task)} | {md_text(r.metric)} | {r.base_value:.4g} | {r.variant_value:.4g} | "
                  f"{'n/a' if math.isnan(r.n) else int(r.n)} | {fmt(r.rel_drift_pct)} | "
                  f"{_ci_text(r.ci_low, r.ci_high, fmt)}{' *' if _mark(r.ci_low, r.ci_high) else ''} | {fmt(r.mde_pct, False)} | "
                  f"{r.verdict if isinstance(r.verdict, str) else ''} |"
                  for r in board.per_task.itertuples()]
    lines += ["", "## Checkpoints", "", "| variant | family | size | algorithm | CAN | WILL | HOW | F_adj | BT_adj |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {md_text(r.variant)} | {md_text(r.family)} | {md_text(r.size)} | {md_text(r.algorithm)} | {fmt(r.CAN)} | {fmt(r.WILL)} | {fmt(r.HOW)} | "
              f"{fmt(100 * r.forgetting_adj, False)} | {fmt(100 * r.backward_transfer_adj, False)} |" for r in board.checkpoints.itertuples()]
    if not board.summary.empty:
        lines += ["", "## By algorithm (mean over variants)", "", "| algorithm | capability | variants | drift | 95% CI |", "|---|---|---|---|---|"]
        lines += [f"| {md_text(r.algorithm)} | {md_text(r.key)} | {r.n_variants} | {fmt(r.mean_rel_drift_pct)} | "
                  + ("n/a" if board.aggregate_only else _ci_text(r.ci_low, r.ci_high, fmt)) + " |"
                  for r in board.summary.itertuples()]
    lines += ["", *board.md_sections] if board.md_sections else []
    lines += ["", "Open index.html for figures, sortable tables and per-task drill-down of forgotten and gained items.", ""]
    return "\n".join(lines)
