"""Hostile labels and a scanner of every file a command wrote: no raw HTML, no live formula, no broken code span."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

from markdown_it import MarkdownIt

IMG = "<img src=x onerror=alert(1)>"
FORMULA = '=HYPERLINK("http://evil.example","x")'
TICK = "tick`task"
BRACKETS = "weird[/]"
LABELS = {"name": f"v{IMG}", "algorithm": FORMULA, "family": f"@fam|{BRACKETS}", "size": "+1", "data": "-cmd"}
"""One hostile value per label a user picks: HTML with a handler, a spreadsheet formula, a table pipe and rich markup."""

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.IGNORECASE)


class _Tags(HTMLParser):
    """Every tag and `on*` attribute in an HTML text."""

    def __init__(self) -> None:
        super().__init__()
        self.planted: list[str] = []
        self.handlers: list[str] = []
        self.code: list[str] = []
        self.text = ""
        self._in_code = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if ("src", "x") in attrs:
            self.planted.append(tag)
        self.handlers += [f"<{tag} {k}>" for k, _ in attrs if k.lower().startswith("on")]
        if tag == "code":
            self._in_code += 1
            self.code.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "code":
            self._in_code -= 1

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in_code:
            self.code[-1] += data


def _tags(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    return parser


def scan_html(path: Path, html: str) -> list[str]:
    """Problems in an HTML text: an event handler, or an element the labels planted (<img src=x>, <script>alert)."""
    found = _tags(html)
    bad = [f"{path}: handler {h}" for h in found.handlers] + [f"{path}: planted <{t}>" for t in found.planted]
    return bad + ([f"{path}: planted <script>"] if "<script>alert" in html.lower() else [])


def scan_markdown(path: Path, text: str) -> list[str]:
    """Render with HTML enabled (as many viewers do) and scan; every label with a backtick must sit whole in one code span."""
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(text)
    bad = scan_html(path, html)
    found = _tags(html)
    if TICK in text.replace("\\`", "`") and TICK not in found.text:  # a backtick opened or closed a code span early
        bad.append(f"{path}: {TICK!r} is broken by a code span")
    return bad


def scan_csv(path: Path, text: str) -> list[str]:
    """Cells (headers included) that a spreadsheet would run as a formula."""
    bad = []
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        for cell in row:
            if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
                bad.append(f"{path}:{i + 1}: live formula {cell[:40]!r}")
    return bad


def scan_folder(folder: Path) -> tuple[list[str], list[Path]]:
    """(problems, files scanned) of every .html, .md and .csv under `folder`."""
    bad: list[str] = []
    scanned = []
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".html", ".md", ".csv"):
            continue
        text = path.read_text(encoding="utf-8")
        scanned.append(path)
        if path.suffix == ".html":
            bad += scan_html(path, text)
        elif path.suffix == ".md":
            bad += scan_markdown(path, text)
        else:
            bad += scan_csv(path, text)
    return bad, scanned
