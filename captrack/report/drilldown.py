"""Task drill-down pages of a leaderboard: every forgotten and gained item with its prompt, its gold
answer as text, the answer the metric's own scorer read from each response beside the response,
and how each metric on the page was scored (rule-based, LLM judge, sandbox, option likelihood).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import pandas as pd

from captrack.analysis.comparison import Comparison
from captrack.errors import UnknownNameError
from captrack.metrics.scored import WHOLE_RESPONSE
from captrack.official.scorers import scored_answer_text
from captrack.report.html import esc, page, table
from captrack.report.slugs import task_page_name
from captrack.results.samples import ItemText

if TYPE_CHECKING:
    from captrack.analysis.board_summary import BoardTables, Flipped
    from captrack.labels import VariantLabels
    from captrack.report.board_spec import LeaderboardSpec

__all__ = ["DRILL_LIMIT", "DrillRow", "DrillTexts", "drill_texts", "scoring_method", "scoring_table", "task_pages",
           "warn_missing_texts"]

_LOG = logging.getLogger(__name__)

DRILL_LIMIT = 50
NO_GOLD = "(no reference answer: see how the metric is scored above)"
Texts = dict[tuple[str, str], dict[int, ItemText]]


def scoring_method(metric: str, output_type: str, judge: str | None) -> str:
    """How one metric of a task was scored, in words a reader of the page understands."""
    from captrack.metrics.registry import get_metric

    if judge:
        return f"LLM judge {judge} (`captrack judge`; an unparsable verdict is NaN, left out of pairing)"
    if output_type == "multiple_choice":
        return "option log-likelihood: the option the model scores highest is its answer (nothing generated)"
    if metric == "outcome":  # captrack.imports.tool_outcomes: another tool's verdicts, taken as they are
        return ("the evaluating tool's own per-item outcome, imported by `captrack import` and not re-scored by captrack "
                "(its source and format are in the run's results file, captrack_import)")
    if metric == "pass_at_1":
        return "unit tests run on the generated program in a bubblewrap sandbox (no network; a pass is decided after the tests return)"
    try:
        description = get_metric(metric).description
    except UnknownNameError:
        description = "a metric captrack does not declare"
    if metric in ("acc", "acc_norm"):  # their declared wording is about option likelihoods, which a generated answer has none of
        description = ("the answer the task's scorer read from the generated response (an option letter, "
                       "a number or a short answer; shown as \u201cscored\u201d per item) equals the gold one")
    return f"rule-based, no model in the loop: {description}"


def _judges(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for comparison, _ in comparisons:
        for tasks in comparison.judged.values():
            for task, metrics in tasks.items():
                for metric, found in metrics.items():
                    out[(str(task), str(metric))] = str(found["judge"])
    return out


def _output_types(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for comparison, _ in comparisons:
        for task, kind in comparison.output_types.items():
            out.setdefault(task, kind)
    return out


def scoring_table(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> pd.DataFrame:
    """task, metric, scored_by for every (task, metric) of the leaderboard's drift table (store-based boards)."""
    pairs = sorted({(str(t), str(m)) for c, _ in comparisons for t, m in zip(c.drift["task"], c.drift["metric"], strict=True)})
    if spec.store is None:
        return pd.DataFrame(columns=["task", "metric", "scored_by"])
    judges = _judges(comparisons)
    kinds = _output_types(comparisons)
    rows = [{"task": t, "metric": m, "scored_by": scoring_method(m, kinds.get(t, ""), judges.get((t, m)))} for t, m in pairs]
    return pd.DataFrame(rows, columns=["task", "metric", "scored_by"])


@dataclass(frozen=True)
class DrillRow:
    """One flipped item on a task page: who flipped which way, its gold text, and the escaped table cells shown."""

    variant: str
    change: str
    gold: str
    cells: str


@dataclass(frozen=True)
class DrillTexts:
    """What the task pages read of a board's comparisons: the flipped items' texts, how each forgotten multiple-choice
    item was lost, and each task's output type (plain data)."""

    texts: Texts
    lost: dict[tuple[str, str, str], str]  # (variant, task, doc_hash) -> collapse / drift / shift
    output_types: dict[str, str]


def drill_texts(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> DrillTexts:
    """The texts and labels the task pages show, gathered from every comparison of the board."""
    texts: Texts = {}
    for comparison, _ in comparisons:
        for key, found in comparison.item_texts.items():
            texts.setdefault(key, {}).update(found)
    return DrillTexts(texts, _forgetting_kinds(comparisons), _output_types(comparisons))


def task_pages(spec: LeaderboardSpec, drill: DrillTexts, computed: BoardTables, scoring: pd.DataFrame,
               drift: pd.DataFrame | None = None) -> dict[str, str]:
    """One HTML page per task with transitions: file name -> page text, each headed by its change per variant and
    metric as drift.csv gives it (base, variant, Δ with its 95% CI and verdict), then the flipped items the board's
    tables found (captrack.analysis.board_summary), their texts from `drill` (drill_texts)."""
    pages: dict[str, str] = {}
    if spec.store is None:
        return pages
    kinds, kinds_of_task, texts = drill.lost, drill.output_types, drill.texts
    trans, flips = computed.frames["transitions"].drop_duplicates(["variant", "task", "metric"]), computed.flips
    for task, frame in trans.groupby("task", sort=True):
        base_cells: dict[tuple[str, str, int], str] = {}  # a base item's cells, shown beside every variant that flipped it
        rows: list[DrillRow] = []
        total = 0
        ordered = frame.sort_values(["variant", "metric"])
        for variant, metric in zip(ordered["variant"].astype(str), ordered["metric"].astype(str), strict=True):
            items = flips[variant][(str(task), metric)]
            total += items.total
            lost = [kinds.get((variant, str(task), h), "") for h in items.doc_hashes]
            rows += _item_rows(variant, metric, items, lost, str(task), texts, kinds_of_task.get(str(task), ""), base_cells)
        name = task_page_name(str(task))
        how = scoring[scoring["task"] == task]
        changes = _change_table(spec, drift[drift["task"] == task] if drift is not None else None, frame)
        pages[name] = _task_page(spec, str(task), sorted(frame["variant"].unique()), rows, total, how, changes)
    return pages


def warn_missing_texts(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> None:
    """Log once for the whole board (not per item) why some flipped items' texts are missing on the task pages."""
    unavailable = sorted({reason for comparison, _ in comparisons for reason in comparison.texts_unavailable})
    if unavailable:
        _LOG.warning("item texts missing on the task pages: %s%s; re-ingest the runs (or restore the files) and "
                     "rebuild", "; ".join(unavailable[:3]), f" and {len(unavailable) - 3} more" if len(unavailable) > 3 else "")


def _forgetting_kinds(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[tuple[str, str, str], str]:
    """(variant, task, doc_hash) -> collapse / drift / shift for forgotten multiple-choice items."""
    out: dict[tuple[str, str, str], str] = {}
    for comparison, _ in comparisons:
        out |= comparison.distribution_items.forgotten_kinds()
    return out


def _pre(value: str) -> str:
    return f'<td><pre class="text">{esc(value)}</pre></td>'


@lru_cache(maxsize=1 << 14)  # a base item's prompt is shown once per variant that flipped it
def _question(prompt: str) -> str:
    """The question first; the template's preamble and few-shot examples folded under it."""
    from captrack.report.prompt_fold import fold_prompt

    folded = fold_prompt(prompt)
    rest = (f'<details class="preamble"><summary>rest of the prompt ({len(folded.folded):,} characters: template, '
            f'examples)</summary><pre class="text">{esc(folded.folded)}</pre></details>') if folded.folded else ""
    return f'<td class="question"><pre class="text">{esc(folded.question)}</pre>{rest}</td>'


def _answer(scored: str, response: str) -> str:
    """One model's side: the answer the metric's scorer read (or that it judged the whole response) above the response."""
    if scored == WHOLE_RESPONSE:
        read = '<div class="extracted">scored: the whole response</div>'
    else:
        read = f'<div class="extracted">scored: <b>{esc(scored)}</b></div>'
    return f'<td class="response">{read}<pre class="text">{esc(response)}</pre></td>'


def _item_rows(variant: str, metric: str, items: Flipped, lost: list[str], task: str, texts: Texts,
               kind: str, base_cells: dict[tuple[str, str, int], str]) -> list[DrillRow]:
    """The page rows of one (variant, metric)'s flipped items (`lost`: how each forgotten item was lost, or ""),
    their texts as the comparison read them; the base side's cells are kept in `base_cells` (by base run, metric
    and doc id) for the next variant."""
    if not items.doc_ids:
        return []
    base_run = items.base_run
    base_text = texts.get((base_run, task), {})
    var_text = texts.get((items.variant_run, task), {})
    missing = "(text unavailable: samples file gone or changed since ingest)"
    out = []
    for doc_id, flip, how in zip(items.doc_ids, items.changes, lost, strict=True):
        b, v = base_text.get(int(doc_id)), var_text.get(int(doc_id))
        change = f"{flip} ({how})" if how else flip
        gold = (b.gold or NO_GOLD) if b else missing
        key = (base_run, metric, int(doc_id))
        base_side = base_cells.get(key)
        if base_side is None:
            base_side = base_cells[key] = "".join([
                _question(b.prompt) if b else _pre(missing), f'<td class="gold"><pre class="text">{esc(gold)}</pre></td>',
                _answer(scored_answer_text(task, metric, b.doc, b.response, kind), b.response) if b else _pre(missing)])
        cells = "".join([
            f'<td class="num key">{int(doc_id)}</td><td class="key key2">{esc(variant)}</td><td class="change">{esc(change)}</td>',
            base_side,
            _answer(scored_answer_text(task, metric, v.doc, v.response, kind), v.response) if v else _pre(missing),
            f'<td>{esc(metric)}</td>',
        ])
        out.append(DrillRow(variant, flip, gold, cells))
    return out


_CHANGE_COLUMNS = ("variant", "metric", "base_value", "variant_value", "oriented_change", "change_ci_low", "change_ci_high",
                   "change_unit", "verdict")  # what the change table reads of drift.csv's rows


def _change_table(spec: LeaderboardSpec, drift: pd.DataFrame | None, transitions: pd.DataFrame) -> str:
    """The task's change per variant and metric, as on the index page: base, variant, Δ [95% CI] → verdict, `*`,
    and the items that went 1→0 and 0→1 ("" without drift rows)."""
    from captrack.report.numbers import missing, verdict_text
    from captrack.report.verdict_cells import SIGNIFICANCE, mark

    if drift is None or drift.empty or "verdict" not in drift:
        return ""
    flips = {(str(v), str(m)): (n10, n01) for v, m, n10, n01 in zip(
        transitions["variant"], transitions["metric"], transitions["n_10"], transitions["n_01"], strict=True)}
    rows = []
    shown = drift.drop_duplicates(["variant", "metric"]).sort_values(["variant", "metric"])
    for r in shown[[c for c in _CHANGE_COLUMNS if c in shown.columns]].to_dict("records"):
        said = verdict_text(r["oriented_change"], r["change_ci_low"], r["change_ci_high"], str(r.get("change_unit") or "points"),
                            r["verdict"], spec.margin)
        lost, won = flips.get((str(r["variant"]), str(r["metric"])), (None, None))
        rows.append([f"<td>{esc(r['variant'])}</td>", f"<td>{esc(r['metric'])}</td>",
                     *(f'<td class="num">{"n/a" if missing(x) else f"{float(x):.4g}"}</td>' for x in (r["base_value"], r["variant_value"])),
                     f'<td class="verdict v-{esc(r["verdict"])}">{esc(said)}</td>', f"<td>{mark(r['verdict'])}</td>",
                     *(f'<td class="num">{"n/a" if missing(x) else int(x)}</td>' for x in (lost, won))])
    header = ["variant", "metric", "base", "variant score", f"Δ (+ better) [95% CI] → verdict at ±{spec.margin:g}", "*",
              "items 1→0", "items 0→1"]
    return (f'<h2 id="change">Change</h2><p class="muted">{esc(SIGNIFICANCE)} Method and verdict rule: the leaderboard\'s '
            "note.</p>" + table(header, rows, "change-table"))


def _task_page(spec: LeaderboardSpec, task: str, variants: list[str], rows: list[DrillRow], total: int,
               scoring: pd.DataFrame, changes: str = "") -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in variants)
    filters = (f'<div class="filters"><label>variant <select data-filter="variant"><option value="">all</option>{options}</select></label>'
               '<label>change <select data-filter="change"><option value="">all</option><option value="forgotten">forgotten (1→0)</option>'
               '<option value="gained">gained (0→1)</option></select></label>'
               '<label>search <input type="search" data-filter="text" placeholder="text in prompt or responses"></label></div>')
    body_rows = [f'<tr data-item="1" data-variant="{esc(r.variant)}" data-change="{esc(r.change)}">{r.cells}</tr>' for r in rows]
    columns = (("doc", "key"), ("variant", "key key2"), ("change", "change"), ("question (rest of the prompt folded)", "question"),
               ("gold", "gold"), ("base: answer scored, response", "response"), ("variant: answer scored, response", "response"),
               ("metric", ""))
    head = "".join(f'<th class="{cls}">{esc(h)}</th>' for h, cls in columns)
    tbl = (f'<div class="scroll"><table id="items" class="sortable drill"><thead><tr>{head}</tr></thead><tbody>\n'
           + "\n".join(body_rows) + "\n</tbody></table></div>")
    how = "".join(f"<li><b>{esc(r.metric)}</b>: {esc(r.scored_by)}</li>" for r in scoring.itertuples())
    scored = f'<h2 id="scoring">How each metric was scored</h2><ul id="scoring-list">{how}</ul>' if how else ""
    note = (f'<p class="muted">Showing <span id="shown">{len(rows)}</span> of {total} flipped items (at most {DRILL_LIMIT} '
            "per variant and metric). Each row shows the question first (the chat template's text and any examples before "
            "it are folded under it); \u201cscored\u201d is the answer the metric's own scorer read from the response and compared "
            "with the gold (the chosen option for option-likelihood tasks; the whole response for metrics that judge all "
            "of it). Scroll the table sideways: the doc and variant columns stay in place.</p>")
    if any(f"({kind})" in r.cells for r in rows for kind in ("collapse", "drift", "shift")):
        note += ('<p class="muted" id="kinds">How a forgotten multiple-choice item was lost, in brackets: <b>collapse</b> '
                 "(the variant gives the base's answer almost no probability), <b>drift</b> (the answer kept its "
                 "probability and lost a near tie; the mixture paper's sense, not the relative drift % of the "
                 "leaderboard), <b>shift</b> (otherwise).</p>")
    nav = '<nav><a href="../index.html">&larr; leaderboard</a></nav>'
    return page(f"{task} — {spec.title}", f"<h1>{esc(task)}</h1>{changes}{scored}{note}{filters}{tbl}", nav, wide=True)
