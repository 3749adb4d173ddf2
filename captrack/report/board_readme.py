"""A leaderboard's README.md: the same findings, grid and tables as its index page, in Markdown."""

from __future__ import annotations

from captrack.report.algorithm_notes import algorithm_notes
from captrack.report.board_model import AGGREGATE_NOTE, NOISE_NOTE, Board, scale_label
from captrack.report.escape import md_text
from captrack.report.floor_section import floor_mark
from captrack.report.numbers import (
    ci_text,
    excludes_zero,
    missing,
    plain,
    signed_change,
    verdict_text,
)
from captrack.report.numbers import signed as fmt_signed
from captrack.report.pictures import picture_markdown
from captrack.report.power_hint import HINT_HEADER, task_hints
from captrack.report.verdict_cells import RELATIVE_COLUMN, VERDICT_MARKS, mark

__all__ = ["board_readme"]


def _md_cell(board: Board, label: str, variant: str) -> str:
    """A README grid cell: Δ [95% CI] and the verdict's mark and word, or relative drift for aggregate scores."""
    cells, at = board.cells, board.cells.at
    value = at["value"][label, variant]
    if not cells.with_verdicts:
        return fmt_signed(value, suffix="%")
    found = str(at["verdict"][label, variant])
    low, high = at["low"][label, variant], at["high"][label, variant]
    text = f"{signed_change(value, excludes_zero(low, high))} {ci_text(low, high)}" if not missing(value) else "n/a"
    return f"{text} {VERDICT_MARKS[found]} {found}" if found in VERDICT_MARKS else text


def board_readme(board: Board) -> str:
    def pct(v: float, with_sign: bool = True) -> str:
        return fmt_signed(v, suffix="%") if with_sign else plain(v, suffix="%")

    spec, cells = board.spec, board.cells
    lines = [f"# {md_text(spec.title, table=False)}", "", spec.description, ""]  # description and note: the author's Markdown
    if spec.source_note:
        lines += [f"Source: {spec.source_note}", ""]
    lines += [AGGREGATE_NOTE if board.aggregate_only else NOISE_NOTE, ""]
    if board.said:
        lines += ["## What changed", "", *(f"- {md_text(s, table=False)}" for s in board.said), ""]
    if cells.with_verdicts:
        lines += ["![capability change](figures/heatmap.png)", "",
                  f"## Capability change Δ vs base (+ better; {scale_label(cells)})", "",
                  f"Each cell: Δ, its 95% CI and the verdict at margin ±{spec.margin:g} (▼ regressed, ▲ improved, "
                  "≈ equivalent, ? inconclusive, • changed; see index.html's Per capability and captrack's docs/statistics.md).", ""]
    else:
        lines += ["![capability drift](figures/heatmap.png)", "", "## Capability drift (%; relative to each variant's base)", ""]
    matrix = cells.value
    lines += ["| capability | " + " | ".join(md_text(c) for c in matrix.columns) + " |", "|---" * (len(matrix.columns) + 1) + "|"]
    lines += [f"| {md_text(label)} | " + " | ".join(_md_cell(board, label, v) for v in matrix.columns) + " |"
              for label in matrix.index]
    lines += ["", *picture_markdown(cells.with_verdicts and not board.aggregate_only, board.per_task, board.checkpoints)]
    lines += ["## Per task", ""]
    if board.aggregate_only:
        lines += [f"| variant | task | metric | base | variant score | n | {RELATIVE_COLUMN} |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {md_text(r.variant)} | {md_text(r.task)} | {md_text(r.metric)} | {r.base_value:.4g} | {r.variant_value:.4g} | n/a | {pct(r.rel_drift_pct)} |"
                  for r in board.per_task.itertuples()]
    else:
        lines += [f"| variant | task | metric | base | variant score | n | Δ (+ better) [95% CI] → verdict at ±{spec.margin:g} | "
                  f"{HINT_HEADER} | * | {RELATIVE_COLUMN} |", "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {md_text(r.variant)} | {md_text(r.task)} | {md_text(r.metric)} | {r.base_value:.4g} | {r.variant_value:.4g} | "
                  f"{'n/a' if missing(r.n) else int(r.n)} | "
                  f"{verdict_text(r.oriented_change, r.change_ci_low, r.change_ci_high, str(r.change_unit or 'points'), r.verdict, spec.margin)} | "
                  f"{hint}{floor_mark(board.within_floor, r.variant, r.task, r.metric)} | {mark(r.verdict)} | {pct(r.rel_drift_pct)} |"
                  for r, hint in zip(board.per_task.itertuples(), task_hints(board.per_task, spec.margin), strict=True)]
    groups = ("CAN Δ", "WILL Δ", "HOW Δ") if cells.with_verdicts else ("CAN", "WILL", "HOW")
    lines += ["", "## Checkpoints", "", f"| variant | family | size | algorithm | {' | '.join(groups)} | F_adj | BT_adj | significant tasks |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {md_text(r.variant)} | {md_text(r.family)} | {md_text(r.size)} | {md_text(r.algorithm)} | "
              + " | ".join(_md_group(board, g, r.variant, getattr(r, g)) for g in ("CAN", "WILL", "HOW")) + " | "
              f"{pct(100 * r.forgetting_adj, False)} | {pct(100 * r.backward_transfer_adj, False)} | "
              f"{f'{r.significant_tasks} / {r.tasks}' if r.tasks else 'n/a'} |" for r in board.checkpoints.itertuples()]
    if not board.summary.empty:
        lines += ["", "## By algorithm (relative drift, mean over variants)", "", "| algorithm | capability | variants | relative drift | 95% CI |",
                  "|---|---|---|---|---|"]
        lines += [f"| {md_text(r.algorithm)} | {md_text(r.key)} | {r.n_variants} | {pct(r.mean_rel_drift_pct)} | "
                  + ("n/a" if board.aggregate_only else ci_text(r.ci_low, r.ci_high, suffix="%")) + " |"
                  for r in board.summary.itertuples()]
        lines += [line for note in algorithm_notes(board.summary, board.aggregate_only) for line in ("", md_text(note, table=False))]
    lines += ["", *board.md_sections] if board.md_sections else []
    lines += ["", "Open index.html for figures, sortable tables and per-task drill-down of forgotten and gained items.", ""]
    return "\n".join(lines)


def _md_group(board: Board, group: str, variant: str, relative: float) -> str:
    """A checkpoint's group cell in the README: the group's Δ with its verdict's mark (relative drift for aggregate scores)."""
    label = f"{group} (mean)"
    if not board.cells.with_verdicts:
        return fmt_signed(relative, suffix="%")
    if label not in board.cells.value.index:
        return "n/a"
    found = str(board.cells.at["verdict"][label, variant])
    at = board.cells.at
    shown = signed_change(at["value"][label, variant], excludes_zero(at["low"][label, variant], at["high"][label, variant]))
    return f"{shown} {VERDICT_MARKS.get(found, '')}".strip()
