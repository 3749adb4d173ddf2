"""Write a leaderboard folder: index.html, task drill-down pages, README.md, CSVs and figures."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from captrack.analysis.compare import Comparison
from captrack.files import write_atomic
from captrack.report import figures
from captrack.report.findings import findings
from captrack.report.html import esc, page, table
from captrack.report.writer import write_contract_tables
from captrack.results.samples import ItemText, read_item_texts
from captrack.results.store import SamplesFile
from captrack.taxonomy import load_taxonomy

if TYPE_CHECKING:
    from captrack.report.leaderboard import LeaderboardSpec, VariantLabels

__all__ = ["write_pages"]

DRILL_LIMIT = 50


def _num(value: float, pct: bool = True, signed: bool = True) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return '<td class="num" data-sort="">n/a</td>'
    cls = ("pos" if value > 0 else "neg" if value < 0 else "") if signed else ""
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
    return {"capabilities": caps, "drift": drift, "transitions": trans, "labels": label_frame}


def _heatmap_data(caps: pd.DataFrame, variants: list[str], keys: tuple[str, ...]) -> tuple[pd.DataFrame, pd.DataFrame]:
    taxonomy = load_taxonomy()
    rows: list[tuple[str, str, str]] = []
    for group in taxonomy.groups:
        rows.append(("group", group.key, f"{group.key} (mean)"))
        rows += [("capability", c.key, f"{c.key} {c.name}") for c in group.capabilities]
    shown = caps[caps["n_metrics"] > 0]
    present = set(zip(shown["level"], shown["key"], strict=True))
    rows = [r for r in rows if (r[0], r[1]) in present and (not keys or r[1] in keys or r[0] == "group")]
    indexed = caps.set_index(["level", "key", "variant"])
    matrix = pd.DataFrame(index=[r[2] for r in rows], columns=variants, dtype=float)
    marks = pd.DataFrame(False, index=matrix.index, columns=variants)
    for level, key, label in rows:
        for v in variants:
            if (level, key, v) in indexed.index:
                r = indexed.loc[(level, key, v)]
                matrix.loc[label, v] = r["mean_rel_drift_pct"]
                marks.loc[label, v] = bool(r["ci_low"] > 0 or r["ci_high"] < 0)
    return matrix, marks


def _algorithm_summary(caps: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and capability: mean drift over variants, a CI, and mean F / BT."""
    out = []
    rows = caps[(caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    for (algorithm, key), frame in rows.groupby(["algorithm", "key"], sort=True):
        values = frame["mean_rel_drift_pct"].to_numpy(dtype=float)
        mean = float(values.mean())
        if len(values) >= 2:
            half = 1.96 * float(values.std(ddof=1)) / math.sqrt(len(values))
            low, high = mean - half, mean + half
        else:
            low, high = float(frame["ci_low"].iloc[0]), float(frame["ci_high"].iloc[0])
        out.append({"algorithm": algorithm or "(none)", "key": key, "n_variants": len(values),
                    "mean_rel_drift_pct": mean, "ci_low": low, "ci_high": high,
                    "forgetting": frame["forgetting"].mean(), "backward_transfer": frame["backward_transfer"].mean()})
    order = {c.key: i for i, c in enumerate(load_taxonomy().capabilities)}
    frame = pd.DataFrame(out, columns=["algorithm", "key", "n_variants", "mean_rel_drift_pct", "ci_low", "ci_high",
                                       "forgetting", "backward_transfer"])
    return frame.sort_values(["key", "algorithm"], key=lambda s: s.map(order) if s.name == "key" else s).reset_index(drop=True)


def _checkpoints(tables: dict[str, pd.DataFrame], variants: list[str]) -> pd.DataFrame:
    caps, trans = tables["capabilities"], tables["transitions"].drop_duplicates(["variant", "task", "metric"])
    out = []
    for name in variants:
        lab = tables["labels"].set_index("variant").loc[name]
        groups = caps[(caps["variant"] == name) & (caps["level"] == "group")].set_index("key")["mean_rel_drift_pct"]
        t = trans[trans["variant"] == name]
        algorithm = caps.loc[caps["variant"] == name, "algorithm"].iloc[0]
        out.append({"variant": name, "base": lab["base"], "family": lab["family"], "size": lab["size"],
                    "algorithm": algorithm, "data": lab["data"],
                    **{g: groups.get(g, math.nan) for g in ("CAN", "WILL", "HOW")},
                    "forgetting_adj": t["forgetting_adj"].astype(float).mean() if len(t) else math.nan,
                    "backward_transfer_adj": t["backward_transfer_adj"].astype(float).mean() if len(t) else math.nan,
                    "significant_tasks": int((t["q_value"].astype(float) < 0.05).sum()), "tasks": len(t)})
    return pd.DataFrame(out)


def write_pages(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> list[Path]:
    """Write every output of the leaderboard into ``spec.folder``; returns the paths."""
    folder = spec.folder
    tables = _tables(comparisons)
    variants = [v.name for c, _ in comparisons for v in c.variants]
    colors = figures.algorithm_colors([a or "(none)" for a in tables["capabilities"]["algorithm"]])
    matrix, marks = _heatmap_data(tables["capabilities"], variants, spec.capabilities)
    summary = _algorithm_summary(tables["capabilities"])
    checkpoints = _checkpoints(tables, variants)
    written = figures.heatmap_figure(matrix, marks, folder / "figures")
    if not summary.empty:
        written += figures.algorithm_summary_figure(summary, colors, folder / "figures")
    points = checkpoints.dropna(subset=["forgetting_adj"]).assign(algorithm=lambda f: f["algorithm"].replace("", "(none)"))
    if not points.empty:
        written += figures.f_vs_bt_figure(points, colors, folder / "figures")
    written += write_contract_tables(folder, {"transitions.csv": tables["transitions"], "drift.csv": tables["drift"],
                                              "capabilities.csv": tables["capabilities"], "checkpoints.csv": checkpoints,
                                              "algorithms.csv": summary})
    extra_tables, html_sections, md_sections = _pair_sections(spec, comparisons)
    written += write_contract_tables(folder, extra_tables)
    task_pages = _task_pages(spec, comparisons, tables) if spec.store is not None else {}
    for name, text in task_pages.items():
        (folder / "tasks").mkdir(exist_ok=True)
        written.append(write_atomic(folder / "tasks" / name, text))
    said = findings(tables["capabilities"], checkpoints)
    written.append(write_atomic(folder / "index.html", _index(spec, matrix, summary, checkpoints, sorted(task_pages), written, said,
                                                              html_sections)))
    written.append(write_atomic(folder / "README.md", _readme(spec, matrix, summary, checkpoints, said, md_sections)))
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
    pairs = pair_table(comparisons, spec.bootstrap, spec.seed)
    if not pairs.empty:
        tables["pairs.csv"] = pairs
        html.append(pairs_html(pairs))
        md += pairs_markdown(pairs)
    for field in spec.by:
        frames = [c.by_field[field] for c, _ in comparisons if field in c.by_field]
        if frames:
            frame = pd.concat(frames, ignore_index=True)
            tables[by_field_file(field)] = frame
            html.append(by_field_html(field, frame, by_field_file(field)))
            md += by_field_markdown(field, frame)
    return tables, html, md


def _index(spec: LeaderboardSpec, matrix: pd.DataFrame, summary: pd.DataFrame, checkpoints: pd.DataFrame,
           task_pages: list[str], written: list[Path], said: list[str], sections: list[str]) -> str:
    names = {p.name for p in written}
    parts = [f"<h1>{esc(spec.title)}</h1>", f"<p>{esc(spec.description)}</p>"]
    if spec.source_note:
        parts.append(f'<p class="note">Source: {esc(spec.source_note)}</p>')
    if said:
        parts.append('<h2 id="findings">What drifted</h2><ul id="findings-list">'
                     + "".join(f"<li>{esc(s)}</li>" for s in said) + "</ul>")
    parts.append('<h2 id="heatmap">Capability drift</h2><figure><img src="figures/heatmap.png" alt="capability drift heatmap" width="900"></figure>')
    header = ["capability", *matrix.columns]
    rows = [[_td(label), *(_num(v) for v in matrix.loc[label])] for label in matrix.index]
    parts.append(table(header, rows, "capability-table"))
    if "algorithms.png" in names:
        parts.append('<h2 id="algorithms">By post-training algorithm</h2><figure><img src="figures/algorithms.png" alt="drift by algorithm" width="700"></figure>')
        rows = [[_td(r.algorithm), _td(r.key), f'<td class="num">{r.n_variants}</td>', _num(r.mean_rel_drift_pct),
                 _num(r.ci_low), _num(r.ci_high), _num(100 * r.forgetting, signed=False), _num(100 * r.backward_transfer, signed=False)]
                for r in summary.itertuples()]
        parts.append(table(["algorithm", "capability", "variants", "mean drift", "CI low", "CI high", "F", "BT"], rows, "algorithm-table"))
    if "f_vs_bt.png" in names:
        parts.append('<h2 id="f-bt">Forgetting vs backward transfer</h2><figure><img src="figures/f_vs_bt.png" alt="forgetting vs backward transfer" width="560"></figure>')
    rows = [[_td(r.variant), _td(r.base), _td(r.family), _td(r.size), _td(r.algorithm), _td(r.data),
             _num(r.CAN), _num(r.WILL), _num(r.HOW), _num(100 * r.forgetting_adj, signed=False),
             _num(100 * r.backward_transfer_adj, signed=False), f'<td class="num">{r.significant_tasks} / {r.tasks}</td>']
            for r in checkpoints.itertuples()]
    parts.append('<h2 id="checkpoints">Checkpoints</h2><p class="muted">Click a column header to sort.</p>')
    parts.append(table(["variant", "base", "family", "size", "algorithm", "data", "CAN", "WILL", "HOW", "F_adj",
                        "BT_adj", "significant tasks"], rows, "checkpoint-table"))
    parts += sections
    if task_pages:
        links = "".join(f'<li><a href="tasks/{esc(p)}">{esc(p.removesuffix(".html"))}</a></li>' for p in task_pages)
        parts.append(f'<h2 id="tasks">Forgotten and gained items, per task</h2><ul>{links}</ul>')
    parts.append('<p class="muted">Data: capabilities.csv, drift.csv, transitions.csv, checkpoints.csv, algorithms.csv. '
                 'Generated by captrack.</p>')
    return page(spec.title, "\n".join(parts))


@dataclass(frozen=True)
class DrillRow:
    """One flipped item on a task page: who flipped which way, and the escaped table cells shown."""

    variant: str
    change: str
    cells: str


def _task_pages(spec: LeaderboardSpec, comparisons: list[tuple[Comparison, dict[str, VariantLabels]]],
                tables: dict[str, pd.DataFrame]) -> dict[str, str]:
    from captrack.analysis.transitions import flipped_items
    from captrack.metrics.registry import get_metric
    from captrack.results.store import Store

    pages: dict[str, str] = {}
    kinds = _forgetting_kinds(comparisons)
    paired = {name: p for c, _ in comparisons for name, p in c.paired.items()}
    trans = tables["transitions"].drop_duplicates(["variant", "task", "metric"])
    if spec.store is None:
        return pages
    with Store(spec.store, read_only=True) as store:
        files = {model: store.samples_files(model) for model in store.models()}
        for task, frame in trans.groupby("task", sort=True):
            rows: list[DrillRow] = []
            total = 0
            for r in frame.sort_values(["variant", "metric"]).itertuples():
                pair = paired[str(r.variant)]
                lower = get_metric(str(r.metric)).direction == "lower"
                items, count = flipped_items(pair.items, str(task), str(r.metric), lower, DRILL_LIMIT)
                total += count
                items["kind"] = [kinds.get((str(r.variant), str(task), h), "") for h in items["doc_hash"]]
                sides = (files.get(pair.base, {}), files.get(pair.variant, {}))
                rows += _item_rows(str(r.variant), str(r.metric), items, str(task), sides)
            name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(task)) + ".html"
            pages[name] = _task_page(spec, str(task), sorted(frame["variant"].unique()), rows, total)
    return pages


def _forgetting_kinds(comparisons: list[tuple[Comparison, dict[str, VariantLabels]]]) -> dict[tuple[str, str, str], str]:
    """(variant, task, doc_hash) -> collapse / drift / shift for forgotten multiple-choice items."""
    out: dict[tuple[str, str, str], str] = {}
    for comparison, _ in comparisons:
        items = comparison.distribution_items
        if items.empty:
            continue
        for r in items[items["transition"] == "10"].itertuples():
            out[(str(r.variant), str(r.task), str(r.doc_hash))] = str(r.forgetting_kind)
    return out


def _texts(files: dict[tuple[str, str], SamplesFile], run_id: str, task: str, ids: list[int]) -> dict[int, ItemText]:
    file = files.get((run_id, task))
    return read_item_texts(file, ids) if file is not None else {}


def _item_rows(variant: str, metric: str, items: pd.DataFrame, task: str,
               files: tuple[dict[tuple[str, str], SamplesFile], dict[tuple[str, str], SamplesFile]]) -> list[DrillRow]:
    if items.empty:
        return []
    ids = [int(i) for i in items["doc_id"]]
    base_text = _texts(files[0], str(items["base_run"].iloc[0]), task, ids)
    var_text = _texts(files[1], str(items["variant_run"].iloc[0]), task, ids)
    missing = "(text unavailable: samples file moved)"
    out = []
    for r in items.itertuples():
        b, v = base_text.get(int(r.doc_id)), var_text.get(int(r.doc_id))
        change = f"{r.change} ({r.kind})" if r.kind else str(r.change)
        cells = "".join([
            f'<td>{esc(variant)}</td><td>{esc(change)}</td><td class="num">{int(r.doc_id)}</td><td>{esc(metric)}</td>',
            f'<td><pre class="text">{esc(b.prompt if b else missing)}</pre></td>',
            f'<td><pre class="text">{esc(b.gold if b else "")}</pre></td>',
            f'<td><pre class="text">{esc(b.response if b else missing)}</pre></td>',
            f'<td><pre class="text">{esc(v.response if v else missing)}</pre></td>',
        ])
        out.append(DrillRow(variant, str(r.change), cells))
    return out


def _task_page(spec: LeaderboardSpec, task: str, variants: list[str], rows: list[DrillRow], total: int) -> str:
    options = "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in variants)
    filters = (f'<div class="filters"><label>variant <select data-filter="variant"><option value="">all</option>{options}</select></label>'
               '<label>change <select data-filter="change"><option value="">all</option><option value="forgotten">forgotten (1→0)</option>'
               '<option value="gained">gained (0→1)</option></select></label>'
               '<label>search <input type="search" data-filter="text" placeholder="text in prompt or responses"></label></div>')
    body_rows = [f'<tr data-item="1" data-variant="{esc(r.variant)}" data-change="{esc(r.change)}">{r.cells}</tr>' for r in rows]
    head = "".join(f"<th>{h}</th>" for h in ("variant", "change", "doc", "metric", "prompt", "gold", "base response", "variant response"))
    tbl = (f'<div class="scroll"><table id="items" class="sortable"><thead><tr>{head}</tr></thead><tbody>\n'
           + "\n".join(body_rows) + "\n</tbody></table></div>")
    note = f'<p class="muted">Showing <span id="shown">{len(rows)}</span> of {total} flipped items (at most {DRILL_LIMIT} per variant and metric).</p>'
    nav = '<nav><a href="../index.html">&larr; leaderboard</a></nav>'
    return page(f"{task} — {spec.title}", f"<h1>{esc(task)}</h1>{note}{filters}{tbl}", nav)


def _readme(spec: LeaderboardSpec, matrix: pd.DataFrame, summary: pd.DataFrame, checkpoints: pd.DataFrame,
            said: list[str], sections: list[str]) -> str:
    def fmt(v: float, signed: bool = True) -> str:
        return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else (f"{v:+.1f}%" if signed else f"{v:.1f}%")

    lines = [f"# {spec.title}", "", spec.description, ""]
    if spec.source_note:
        lines += [f"Source: {spec.source_note}", ""]
    if said:
        lines += ["## What drifted", "", *(f"- {s}" for s in said), ""]
    lines += ["![capability drift](figures/heatmap.png)", "", "## Capability drift (%; relative to each variant's base)", ""]
    lines += ["| capability | " + " | ".join(matrix.columns) + " |", "|---" * (len(matrix.columns) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(fmt(v) for v in matrix.loc[label]) + " |" for label in matrix.index]
    lines += ["", "## Checkpoints", "", "| variant | family | size | algorithm | CAN | WILL | HOW | F_adj | BT_adj |", "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r.variant} | {r.family} | {r.size} | {r.algorithm} | {fmt(r.CAN)} | {fmt(r.WILL)} | {fmt(r.HOW)} | "
              f"{fmt(100 * r.forgetting_adj, False)} | {fmt(100 * r.backward_transfer_adj, False)} |" for r in checkpoints.itertuples()]
    if not summary.empty:
        lines += ["", "## By algorithm (mean over variants)", "", "| algorithm | capability | variants | drift | 95% CI |", "|---|---|---|---|---|"]
        lines += [f"| {r.algorithm} | {r.key} | {r.n_variants} | {fmt(r.mean_rel_drift_pct)} | [{fmt(r.ci_low)}, {fmt(r.ci_high)}] |"
                  for r in summary.itertuples()]
    lines += ["", *sections] if sections else []
    lines += ["", "Open index.html for figures, sortable tables and per-task drill-down of forgotten and gained items.", ""]
    return "\n".join(lines)
