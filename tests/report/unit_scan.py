"""Scan a board's rendered pages for mixed units (issue 56): a relative quantity printed in "points" or
"percentage points", and a change printed as a rounded 0.0 beside a CI that excludes 0 (or beside a verdict mark
that says the CI excludes 0)."""

from __future__ import annotations

import html
import re
from pathlib import Path

__all__ = ["page_problems", "scan_board"]

_PERCENTAGE_POINTS = re.compile(r"percentage[ -]points?", re.I)
# a relative quantity (relative drift, % of base, "%") followed closely by the word points
_RELATIVE_IN_POINTS = re.compile(r"(relative drift|% of base|\d%)(?:[^.;|<>\n\[]|\.(?=\d)){0,40}?\bpoints\b", re.I)
_NUMBER = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
# a zero change with its CI: "0.0 points [+0.1, +0.3]", "0.00% of base [...]", "| 0.0 [+0.2, +0.9] ▲"
_ZERO_WITH_CI = re.compile(rf"(?<![\d.+-])0\.0+(?:\s*(?:points|% of base|%))?\s*\[\s*({_NUMBER})%?,\s*({_NUMBER})%?\s*\]")
# a zero change marked significant: "0.0 ▲" (a grid or checkpoint cell whose verdict's CI excludes 0)
_ZERO_MARKED = re.compile(r"(?<![\d.+-])0\.0+\s*[▼▲•]")


def page_problems(text: str, where: str) -> list[str]:
    """Every mixed unit on one page (HTML or Markdown), each as ``where: what: the text``."""
    shown = html.unescape(text)
    flat = html.unescape(re.sub(r"<[^>]+>", " ", text))
    found = []
    for source in (shown, flat):
        found += [f"{where}: percentage points: {m.group(0)!r}" for m in _PERCENTAGE_POINTS.finditer(source)]
        found += [f"{where}: relative quantity in points: {m.group(0)!r}" for m in _RELATIVE_IN_POINTS.finditer(source)]
        found += [f"{where}: 0.0 beside a CI that excludes 0: {m.group(0)!r}" for m in _ZERO_WITH_CI.finditer(source)
                  if float(m.group(1)) > 0 or float(m.group(2)) < 0]
        found += [f"{where}: 0.0 marked significant: {m.group(0)!r}" for m in _ZERO_MARKED.finditer(source)]
    return sorted(set(found))


def scan_board(folder: Path) -> list[str]:
    """page_problems over every page of a board folder: index.html, README.md, steps.html and the task pages."""
    pages = [folder / "index.html", folder / "README.md", folder / "steps.html", *sorted((folder / "tasks").glob("*.html"))]
    return [problem for page in pages if page.is_file()
            for problem in page_problems(page.read_text(encoding="utf-8"), str(page.relative_to(folder)))]
