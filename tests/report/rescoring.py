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
from captrack.metrics.scored import NONE_FOUND, WHOLE_RESPONSE, task_scorers
from captrack.results.samples import read_item_texts
from captrack.results.store import Store


@dataclass
class Rescored:
    """What the check saw: answers re-scored, answers that are whole responses, and disagreements."""

    checked: int = 0
    whole: int = 0
    mismatches: list[str] = field(default_factory=list)


def page_rows(page: str) -> list[list[str]]:
    """The cells of each item row of a drill-down page, as text."""
    rows = re.findall(r'<tr data-item="1"[^>]*>(.*?)</tr>', page, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)]
            for r in rows]


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
        docs, kind = _docs(store, task, sorted({int(r[2]) for r in rows}))
        for cells in rows:
            variant, change, doc_id, metric, gold = cells[0], cells[1].split(" ")[0], int(cells[2]), cells[3], cells[5]
            lower = get_metric(metric).direction == "lower"
            good, bad = (0.0, 1.0) if lower else (1.0, 0.0)
            expected = (good, bad) if change == "forgotten" else (bad, good)
            for side, shown, value in (("base", cells[6], expected[0]), (variant, cells[8], expected[1])):
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
