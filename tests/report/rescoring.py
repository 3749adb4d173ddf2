"""Re-score the answer each drill-down row shows and compare with the value the page says it had.

A row's change says the values: forgotten is base 1 → variant 0 and gained the reverse (for a
lower-is-better metric, 0 is the good value). The shown answer of each side, scored again by the
task's own scorer against the item's doc, must give that side's value; for option-likelihood tasks the
shown option must be the gold one exactly where the value is 1.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

from captrack.metrics.registry import get_metric, get_scorer, score
from captrack.metrics.scored import NONE_FOUND, WHOLE_RESPONSE
from captrack.official.scorers import task_scorers
from captrack.results.samples import read_item_texts
from captrack.results.store import Store


@dataclass
class Rescored:
    """What the check saw: answers re-scored, answers that are whole responses, and disagreements."""

    checked: int = 0
    whole: int = 0
    mismatches: list[str] = field(default_factory=list)


def _text(cell: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def _scored(cell: str) -> str:
    """The answer a side's cell says was scored (WHOLE_RESPONSE where the metric reads all of it)."""
    found = re.search(r'<div class="extracted">scored: (.*?)</div>', cell, re.S)
    assert found, f"no scored answer in {cell[:200]!r}"
    bold = re.fullmatch(r"<b>(.*)</b>", found.group(1), re.S)
    return html.unescape(bold.group(1)) if bold else WHOLE_RESPONSE


def page_rows(page: str) -> list[dict[str, str]]:
    """Each item row of a drill-down page: doc, variant, change, gold, metric and the answer scored on each side."""
    rows = []
    for row in re.findall(r'<tr data-item="1"[^>]*>(.*?)</tr>', page, re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        rows.append({"doc": _text(cells[0]), "variant": _text(cells[1]), "change": _text(cells[2]).split(" ")[0],
                     "gold": _text(cells[4]), "base": _scored(cells[5]), "other": _scored(cells[6]),
                     "metric": _text(cells[7])})
    return rows


def _docs(store: Path, task: str, ids: list[int]) -> tuple[dict[int, dict], str]:
    with Store(str(store), read_only=True) as opened:
        for model in opened.models():
            for (_, name), file in opened.samples_files(model).items():
                if name == task:
                    texts = read_item_texts(file, ids)
                    if texts:
                        return {i: dict(t.doc) for i, t in texts.items()}, file.output_type
    return {}, ""


def rescore_pages(board: Path, store: Path) -> Rescored:
    """Check every row of every page under ``board/tasks`` (see the module docstring)."""
    out = Rescored()
    for page in sorted((board / "tasks").glob("*.html")):
        task = page.stem
        rows = page_rows(page.read_text(encoding="utf-8"))
        docs, kind = _docs(store, task, sorted({int(r["doc"]) for r in rows}))
        for row in rows:
            variant, change, doc_id, metric, gold = row["variant"], row["change"], int(row["doc"]), row["metric"], row["gold"]
            lower = get_metric(metric).direction == "lower"
            good, bad = (0.0, 1.0) if lower else (1.0, 0.0)
            expected = (good, bad) if change == "forgotten" else (bad, good)
            for side, shown, value in (("base", row["base"], expected[0]), (variant, row["other"], expected[1])):
                label = f"{task} doc {doc_id} {metric} {side}: shown {shown!r}"
                if shown == WHOLE_RESPONSE:
                    out.whole += 1
                    continue
                out.checked += 1
                if kind == "multiple_choice":
                    if (shown == gold) != (value == 1.0):
                        out.mismatches.append(f"{label} vs gold {gold!r}, value {value}")
                    continue
                names, doc = task_scorers(task, docs[doc_id])
                name = next(n for n in names if metric in get_scorer(n)[1])
                got = score(name, doc, "" if shown == NONE_FOUND else shown)[metric]
                if got != value:
                    out.mismatches.append(f"{label} re-scores {got}, page says {value}")
    return out
