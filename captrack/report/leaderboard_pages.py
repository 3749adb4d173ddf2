"""Write a leaderboard folder: index.html, task drill-down pages, README.md, CSVs and figures."""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from captrack.analysis.comparison import Comparison
from captrack.errors import CaptrackError
from captrack.files import write_atomic
from captrack.report import figures, floor_section, pictures
from captrack.report.algorithm_notes import algorithm_notes
from captrack.report.background import Background, Call
from captrack.report.board_model import (
    AGGREGATE_NOTE,
    NOISE_NOTE,
    Board,
    Cells,
    board_cells,
    scale_label,
)
from captrack.report.board_readme import board_readme
from captrack.report.drilldown import drill_texts, scoring_table, task_pages, warn_missing_texts
from captrack.report.findings import findings, target_sentences
from captrack.report.html import esc, page, table
from captrack.report.numbers import (
    ci_text,
    excludes_zero,
    missing,
    plain,
    signed_change,
    verdict_text,
)
from captrack.report.numbers import signed as fmt_signed
from captrack.report.over_training import (
    STEPS_PAGE,
    over_training_sections,
    over_training_tables,
    steps_page,
)
from captrack.report.power_hint import HINT_HEADER, capability_hints, task_hints
from captrack.report.power_section import power_sections
from captrack.report.step_texts import FlipKey, StepTexts
from captrack.report.target_notes import target_capability_sentences
from captrack.report.verdict_cells import (
    COLOUR_NOTE,
    RELATIVE_COLUMN,
    VERDICT_MARKS,
    capability_units,
    mark,
    oriented_task,
    verdict_td,
)
from captrack.report.writer import write_contract_tables

if TYPE_CHECKING:
    from captrack.analysis.board_summary import BoardTables
    from captrack.labels import VariantLabels
    from captrack.report.board_spec import LeaderboardSpec

__all__ = ["AGGREGATE_NOTE", "write_pages"]


def _num(value: float, pct: bool = True, signed: bool = True, oriented: float | None = None) -> str:
    """A number cell; signed cells are coloured by `oriented` (+ better: blue, − worse: red) where given,
    uncoloured where the metric has no better side (oriented NaN), else by the value's own sign. A value that
    rounds to zero prints 0.0, uncoloured."""
    if missing(value):
        return '<td class="num" data-sort="">n/a</td>'
    side = value if oriented is None else (0.0 if missing(oriented) else oriented)
    suffix = "%" if pct else ""
    text = fmt_signed(value, suffix=suffix) if signed else plain(value, suffix=suffix)
    cls = ("pos" if side > 0 else "neg" if side < 0 else "") if signed and text != plain(0.0, suffix=suffix) else ""
    return f'<td class="num {cls}" data-sort="{value:.6g}">{esc(text)}</td>'


def _td(value: object) -> str:
    return f"<td>{esc(value)}</td>"


def _per_task(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per variant, task and metric: base, variant, n, drift, CI and MDE (n and MDE NaN without items)."""
    drift = tables["drift"].drop_duplicates(["variant", "task", "metric"])
    power = tables["power"].reindex(columns=["variant", "task", "metric", "n", "kind", "sd_diff", "mde_abs", "mde_pct"])
    merged = drift.merge(power, on=["variant", "task", "metric"], how="left")
    columns = ["variant", "task", "metric", "capability", "base_value", "variant_value", "n", "rel_drift_pct", "ci_low", "ci_high",
               "kind", "sd_diff", "mde_abs", "mde_pct", "direction", "verdict", "oriented_change", "change_ci_low", "change_ci_high", "change_unit"]
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


def write_pages(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]],
                computed: BoardTables, step_texts: Mapping[FlipKey, StepTexts] | None = None,
                made: Background | None = None) -> list[Path]:
    """Write every output of the leaderboard into ``spec.folder``; returns the paths. `computed`: the board's tables
    (captrack.analysis.board_summary); `step_texts`: each item flipped at a training step, its question and answers
    (captrack.compare.step_texts; None: the steps page lists ids only); `made`: where the figures are drawn
    (captrack.report.background, nothing sent to it yet; None: a Background of its own)."""
    if made is None:
        own = Background()
        try:
            return write_pages(spec, comparisons, computed, step_texts, own)
        finally:
            own.close()
    folder = spec.folder
    tables, aggregate_only, variants = computed.frames, computed.aggregate_only, computed.variants
    tables = floor_section.variant_frames(tables, computed.floor.names)  # the backend's A/A floor is drawn beside them, not as one
    colors = figures.algorithm_colors([a or "(none)" for a in tables["capabilities"]["algorithm"]])
    units = capability_units(tables["drift"])
    cells = board_cells(tables["capabilities"], variants, spec.capabilities, not aggregate_only, units)
    summary, checkpoints = computed.algorithms, computed.checkpoints
    scoring = scoring_table(spec, comparisons)
    drawn = _figure_calls(folder / "figures", cells, aggregate_only, summary, checkpoints, colors)
    drawn |= pictures.figure_calls(folder / "figures", cells, spec.margin, _per_task(tables), checkpoints, aggregate_only)
    made.run(list(drawn.values()))
    return _pages(spec, comparisons, computed, step_texts, cells, units, scoring, made,
                  {f"{stem}.{kind}" for stem in drawn for kind in ("png", "svg")})


def _figure_calls(out: Path, cells: Cells, aggregate_only: bool, summary: pd.DataFrame, checkpoints: pd.DataFrame,
                  colors: dict[str, str]) -> dict[str, Call]:
    """The board's figures (captrack.report.figures) by the stem of their files (each writes <stem>.png and
    <stem>.svg): the heatmap, and the per-algorithm summary and F vs BT where there is something to draw."""
    calls: dict[str, Call] = {"heatmap": (figures.heatmap_figure, (cells.value, cells.significant, out), {
        "with_cis": not aggregate_only, "colors": cells.colour, "verdicts": cells.verdict if cells.with_verdicts else None,
        "unit": scale_label(cells) if cells.with_verdicts else ""})}
    if not summary.empty:
        calls["algorithms"] = (figures.algorithm_summary_figure, (summary, colors, out), {})
    points = checkpoints.dropna(subset=["forgetting_adj"]).assign(algorithm=lambda f: f["algorithm"].replace("", "(none)"))
    if not points.empty:
        calls["f_vs_bt"] = (figures.f_vs_bt_figure, (points, colors, out), {})
    return calls


def _pages(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]], computed: BoardTables,
           step_texts: Mapping[FlipKey, StepTexts] | None, cells: Cells, units: dict[tuple[str, str], str],
           scoring: pd.DataFrame, made: Background, figure_files: set[str]) -> list[Path]:
    """Write the board's tables, task pages, README and index while its figures are drawn (`made`: each result a
    figure's paths, captrack.report.background; `figure_files`: the names of those files); the index, which links
    the figures and pages there are, once they are; returns every path, the figures' first."""
    from captrack.report.slugs import task_page_name

    folder = spec.folder
    tables, aggregate_only = computed.frames, computed.aggregate_only
    summary, checkpoints = computed.algorithms, computed.checkpoints
    written: list[Path] = []
    csvs = {"transitions.csv": tables["transitions"], "drift.csv": tables["drift"], "capabilities.csv": tables["capabilities"],
            "checkpoints.csv": checkpoints, "algorithms.csv": summary}
    if not aggregate_only:
        csvs |= {"power.csv": tables["power"], "rankings.csv": tables["contrasts"]}
    csvs |= floor_section.floor_tables(folder, computed.floor)  # the CSVs above keep the floor's rows; what is drawn shows the variants only
    tables = floor_section.variant_frames(tables, computed.floor.names)
    over = over_training_tables([c.curves for c, _ in comparisons if c.curves is not None])  # drift over training
    written += write_contract_tables(folder, csvs | over)
    extra_tables, html_sections, md_sections = _pair_sections(spec, comparisons)
    if computed.floor.names:
        html_sections = [floor_section.floor_html(computed.floor), *html_sections]
        md_sections = [*floor_section.floor_markdown(computed.floor), *md_sections]
    over_html, over_md, over_figures = over_training_sections(over, folder / "figures", steps_href=f"../{STEPS_PAGE}")
    if over_html:  # boards without trajectories stay byte for byte as they were
        html_sections, md_sections, written = [over_html, *html_sections], [over_md, *md_sections], written + over_figures
    if not aggregate_only:
        power_html, power_md = power_sections(tables["drift"], tables["power"])
        html_sections, md_sections = [power_html, *html_sections], [power_md, *md_sections]
    written += write_contract_tables(folder, extra_tables)
    if spec.store is not None:
        warn_missing_texts(comparisons)
    said = findings(tables["capabilities"], checkpoints, tables["contrasts"], aggregate_only, spec.margin, units, spec.smoke)
    said += target_sentences(tables["drift"], spec.target, spec.margin) if spec.target else []
    said += target_capability_sentences(computed.targets, units, spec.margin)
    caps = _capability_rows(tables)
    caps = caps.assign(change_unit=[units.get((str(v), str(k)), "points") for v, k in zip(caps["variant"], caps["key"], strict=True)])
    board = Board(spec, cells, summary, checkpoints, caps, _per_task(tables), scoring, said, aggregate_only,
                  html_sections, md_sections, floor_section.within_floor(computed.floor))
    # the task pages show the flipped items' texts the comparisons read
    pages = task_pages(spec, drill_texts(comparisons), computed, scoring, computed.frames["drift"]) if spec.store is not None else {}
    for name, text in pages.items():
        (folder / "tasks").mkdir(exist_ok=True)
        written.append(write_atomic(folder / "tasks" / name, text))
    written += _steps_file(folder, spec.title, over, pages, step_texts)
    for stale in sorted((folder / "tasks").glob("*.html")) if (folder / "tasks").is_dir() else []:
        if stale.name not in pages:  # a task no longer on the board: its old page would mislead
            stale.unlink()
    titles = {task_page_name(str(t)): str(t) for t in tables["transitions"]["task"].unique()} if pages else {}
    index = _index(board, {p: titles.get(p, p) for p in pages}, {p.name for p in written} | figure_files)
    readme = board_readme(board)  # both made while the figures may still be drawn
    drawn = [path for paths in made.results() for path in paths]
    if {p.name for p in drawn} != figure_files:  # the index would link files that are not there
        raise CaptrackError(f"the leaderboard's figures are {sorted(p.name for p in drawn)}, not {sorted(figure_files)}")
    written = drawn + written
    written.append(write_atomic(folder / "index.html", index))
    written.append(write_atomic(folder / "README.md", readme))
    return written


def _pair_sections(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]
                   ) -> tuple[dict[str, pd.DataFrame], list[str], list[str]]:
    """pairs.csv (when there are transitions) and by_<field>.csv, with their HTML and README sections."""
    from captrack.output_names import by_field_file
    from captrack.report.pair_tables import (
        by_field_html,
        by_field_markdown,
        pair_sections,
        pair_table,
    )

    tables: dict[str, pd.DataFrame] = {}
    html: list[str] = []
    md: list[str] = []
    pairs = pair_table(comparisons)
    if not pairs.empty:
        drift = pd.concat([c.drift for c, _ in comparisons], ignore_index=True)
        tables["pairs.csv"] = pairs
        pairs_html, pairs_md = pair_sections(pairs, drift, spec.margin)
        html.append(pairs_html)
        md += pairs_md
    for name in spec.by:
        frames = [c.by_field[name] for c, _ in comparisons if name in c.by_field]
        if frames:
            frame = pd.concat(frames, ignore_index=True)
            tables[by_field_file(name)] = frame
            html.append(by_field_html(name, frame, by_field_file(name)))
            md += by_field_markdown(name, frame)
    return tables, html, md


def _ci_cells(low: float, high: float) -> str:
    """Two cells, a CI's ends in %; a CI whose ends would print alike says so instead of reading as certainty."""
    if missing(low) or missing(high):
        return _num(low) + _num(high)
    text = ci_text(low, high, suffix="%")
    if text.startswith("("):  # never "+0.0%  +0.0%"
        said = f'title="{esc(text.strip("()"))}"'
        return (f'<td class="num muted" data-sort="{low:.6g}" {said}>&mdash;</td>'
                f'<td class="num muted" data-sort="{high:.6g}" {said}>{esc(text.strip("()"))}</td>')
    ends = text.strip("[]").split(", ")
    return "".join(f'<td class="num" data-sort="{v:.6g}">{esc(e)}</td>' for v, e in zip((low, high), ends, strict=True))


def _grid_td(board: Board, label: str, variant: str) -> str:
    """One cell of the capability grid: Δ and its verdict's mark (the whole verdict on hover), or relative drift."""
    cells, at, key = board.cells, board.cells.at, (label, variant)
    value, side = at["value"][key], at["colour"][key]
    if not cells.with_verdicts:
        return _num(value, oriented=side)
    found = str(at["verdict"][key])
    if missing(value):
        return '<td class="num" data-sort="">n/a</td>'
    whole = verdict_text(value, at["low"][key], at["high"][key], str(at["unit"][key]), found, board.spec.margin)
    shown = signed_change(value, excludes_zero(at["low"][key], at["high"][key]))
    cls = "" if missing(side) or shown == "0.0" else ("pos" if side > 0 else "neg" if side < 0 else "")
    text = f"{shown} {VERDICT_MARKS.get(found, '')}".strip()
    return f'<td class="num {cls}" data-sort="{value:.6g}" title="{esc(whole)}">{esc(text)}</td>'


def _group_td(board: Board, group: str, variant: str, relative: float) -> str:
    """A checkpoint's group cell: the group's Δ with its verdict's mark (relative drift for aggregate scores)."""
    label = f"{group} (mean)"
    if label in board.cells.value.index and variant in board.cells.value.columns:
        return _grid_td(board, label, variant)
    return _num(relative) if not board.cells.with_verdicts else '<td class="num" data-sort="">n/a</td>'


def _steps_file(folder: Path, title: str, over: dict[str, pd.DataFrame], pages: Collection[str],
                texts: Mapping[FlipKey, StepTexts] | None) -> list[Path]:
    """The steps page of a board with trajectories (written); a board without any has none (an old one removed)."""
    if over:
        return [write_atomic(folder / STEPS_PAGE, steps_page(over["curves.csv"], over["step_flips.csv"], title, pages,
                                                             over["curve_items.csv"], texts))]
    if (folder / STEPS_PAGE).exists():  # no trajectory on the board any more
        (folder / STEPS_PAGE).unlink()
    return []


def _index(board: Board, task_pages: dict[str, str], names: set[str]) -> str:
    spec, cells = board.spec, board.cells
    parts = [f"<h1>{esc(spec.title)}</h1>", f"<p>{esc(spec.description)}</p>"]
    if spec.source_note:
        parts.append(f'<p class="note">Source: {esc(spec.source_note)}</p>')
    parts.append(f'<p class="note" id="precision">{esc(AGGREGATE_NOTE if board.aggregate_only else NOISE_NOTE)}</p>')
    if board.said:
        parts.append('<h2 id="findings">What changed</h2><ul id="findings-list">'
                     + "".join(f"<li>{esc(s)}</li>" for s in board.said) + "</ul>")
    if cells.with_verdicts:
        heading = f"Capability change Δ vs base (+ better; {scale_label(cells)})"
        legend = (f'<p class="muted">Each cell: Δ and its verdict at ±{spec.margin:g} (▼ regressed, ▲ improved, ≈ equivalent, '
                  "? inconclusive, • changed); hover for its 95% CI. Colour: Δ, + better blue, − worse red.</p>")
    else:
        heading, legend = "Capability drift (% of base)", ""
    parts.append(f'<h2 id="heatmap">{esc(heading)}</h2><figure><img src="figures/heatmap.png" alt="capability heatmap" width="900"></figure>'
                 + legend)
    rows = [[_td(label), *(_grid_td(board, label, v) for v in cells.value.columns)] for label in cells.value.index]
    parts.append(table(["capability", *cells.value.columns], rows, "capability-table"))
    parts += pictures.picture_html(names, board.per_task, board.checkpoints)
    parts += _detail_tables(board)
    if "algorithms.png" in names:
        parts.append('<h2 id="algorithms">By post-training algorithm</h2><figure><img src="figures/algorithms.png" alt="relative drift by algorithm" width="700"></figure>')
        rows = [[_td(r.algorithm), _td(r.key), f'<td class="num">{r.n_variants}</td>',
                 _num(r.mean_rel_drift_pct, oriented=r.oriented_drift_pct),
                 _ci_cells(r.ci_low, r.ci_high), _num(100 * r.forgetting, signed=False), _num(100 * r.backward_transfer, signed=False)]
                for r in board.summary.itertuples()]
        parts.append(table(["algorithm", "capability", "variants", "relative drift (mean over variants)", "CI low", "CI high",
                            "F", "BT"], rows, "algorithm-table"))
        parts.append("".join(f'<p class="muted">{esc(note)}</p>' for note in algorithm_notes(board.summary, board.aggregate_only)))
    if "f_vs_bt.png" in names:
        parts.append('<h2 id="f-bt">Forgetting vs backward transfer</h2><figure><img src="figures/f_vs_bt.png" alt="forgetting vs backward transfer" width="560"></figure>')
    groups = ("CAN Δ", "WILL Δ", "HOW Δ") if cells.with_verdicts else ("CAN", "WILL", "HOW")
    rows = [[_td(r.variant), _td(r.base), _td(r.family), _td(r.size), _td(r.algorithm), _td(r.data),
             *(_group_td(board, g, r.variant, getattr(r, g)) for g in ("CAN", "WILL", "HOW")),
             _num(100 * r.forgetting_adj, signed=False),
             _num(100 * r.backward_transfer_adj, signed=False),
             f'<td class="num">{f"{r.significant_tasks} / {r.tasks}" if r.tasks else "n/a"}</td>']
            for r in board.checkpoints.itertuples()]
    parts.append('<h2 id="checkpoints">Checkpoints</h2><p class="muted">Click a column header to sort.</p>')
    parts.append(table(["variant", "base", "family", "size", "algorithm", "data", *groups, "F_adj",
                        "BT_adj", "significant tasks"], rows, "checkpoint-table"))
    parts.append(_scoring_html(board))
    parts += board.html_sections
    if task_pages:
        links = "".join(f'<li><a href="tasks/{esc(p)}">{esc(task)}</a></li>'
                        for p, task in sorted(task_pages.items(), key=lambda kv: kv[1]))
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


def _value_td(value: float) -> str:
    return '<td class="num">n/a</td>' if missing(value) else f'<td class="num">{value:.4g}</td>'


def _detail_tables(board: Board) -> list[str]:
    """Capability and per-task rows: base, variant, Δ with its 95% CI and verdict, `*`, relative drift, MDE and item counts
    (aggregate-only: base, variant and relative drift only)."""
    caps, tasks, margin = board.capabilities, board.per_task, board.spec.margin
    if board.aggregate_only:
        rows = [[_td(r.variant), _td(r.key), _num(r.mean_rel_drift_pct), f'<td class="num">{int(r.n_metrics)}</td>']
                for r in caps.itertuples()]
        task_rows = [[_td(r.variant), _td(r.task), _td(r.metric), _value_td(r.base_value), _value_td(r.variant_value),
                      '<td class="num">n/a</td>', _num(r.rel_drift_pct)]
                     for r in tasks.itertuples()]
        return ['<h2 id="capability-details">Per capability</h2>',
                table(["variant", "capability", RELATIVE_COLUMN, "metrics"], rows, "capability-details-table"),
                '<h2 id="per-task">Per task: base, variant, n</h2>',
                table(["variant", "task", "metric", "base", "variant score", "n", RELATIVE_COLUMN], task_rows, "task-table")]
    verdict = f"Δ (+ better) [95% CI] → verdict at ±{margin:g}"
    rows = [[_td(r.variant), _td(r.key), _value_td(r.base_value), _value_td(r.variant_value),
             verdict_td(r.oriented_change, r.change_ci_low, r.change_ci_high, r.change_unit, r.verdict, margin), _td(hint),
             _td(mark(r.verdict)), _num(r.mean_rel_drift_pct, oriented=r.oriented_drift_pct),
             f'<td class="num">{int(r.n_metrics)}</td>', _count(r.items)]
            for r, hint in zip(caps.itertuples(), capability_hints(caps, tasks, margin), strict=True)]
    task_rows = [[_td(r.variant), _td(r.task), _td(r.metric), _value_td(r.base_value), _value_td(r.variant_value), _count(r.n),
                  verdict_td(r.oriented_change, r.change_ci_low, r.change_ci_high, str(r.change_unit or "points"), r.verdict, margin),
                  _td(hint + floor_section.floor_mark(board.within_floor, r.variant, r.task, r.metric)), _td(mark(r.verdict)),
                  _num(r.rel_drift_pct, oriented=oriented_task(r.direction, r.rel_drift_pct))]
                 for r, hint in zip(tasks.itertuples(), task_hints(tasks, margin), strict=True)]
    return ['<h2 id="capability-details">Per capability</h2>',
            f'<p class="muted">{esc(COLOUR_NOTE)} Base and variant: the mean of the capability\'s metrics.</p>',
            table(["variant", "capability", "base", "variant score", verdict, HINT_HEADER, "*", RELATIVE_COLUMN, "metrics",
                   "items"], rows, "capability-details-table"),
            '<h2 id="per-task">Per task: base, variant, n</h2>',
            table(["variant", "task", "metric", "base", "variant score", "n", verdict, HINT_HEADER, "*", RELATIVE_COLUMN],
                  task_rows, "task-table")]


def _count(value: float) -> str:
    return '<td class="num">n/a</td>' if missing(value) else f'<td class="num">{int(value)}</td>'
