"""The one escaping path for labels people chose (model, variant, algorithm, task, field values, ...).

Every writer shows such a label through one of these, never raw:

- :func:`md_text`: a Markdown table cell or prose (HTML, entities, math, emphasis, links and code marks
  escaped; newlines as spaces; pipes escaped in table cells);
- :func:`md_code`: a Markdown code span that a backtick inside the label cannot close early;
- :func:`md_row`: a Markdown table row of cells already escaped;
- :func:`inert_cell`: a CSV cell a spreadsheet will never run as a formula;
- :func:`console_text`: text printed through rich, whose ``[...]`` would otherwise be read as markup (and whose
  control characters would reach the terminal: see :func:`terminal_text`);
- :func:`terminal_text`: text printed plainly (``print``): control characters, an ANSI escape's ESC among them,
  shown as ``\\xNN`` instead of sent.

HTML pages use :func:`html.escape` (captrack.report.html ``esc``).
"""

from __future__ import annotations

import re

__all__ = ["console_text", "inert_cell", "md_code", "md_row", "md_text", "terminal_text"]

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*[]<>$"} | {"\n": " ", "\r": " "})
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")  # only where it would start an entity


def md_text(value: object, table: bool = True) -> str:
    """Any label as literal Markdown text: HTML, entities, math, emphasis and code marks escaped, newlines
    as spaces, and (in a table cell, `table`) pipes; prose outside tables keeps its pipes."""
    text = _ENTITY.sub(r"\\&", str(value).translate(_MD_SPECIAL))
    return text.replace("|", "\\|") if table else text


def md_code(value: object, table: bool = False) -> str:
    """`value` as one Markdown code span: delimited by more backticks than its longest run, padded with a
    space where it starts or ends with a backtick, newlines as spaces (and pipes escaped in a table cell,
    which GitHub splits on even inside code)."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    runs = [len(m) for m in re.findall(r"`+", text)]
    fence = "`" * (max(runs, default=0) + 1)
    if text.startswith("`") or text.endswith("`") or (text.startswith(" ") and text.endswith(" ") and text.strip()):
        text = f" {text} "
    text = text.replace("|", "\\|") if table else text
    return f"{fence}{text}{fence}"


def md_row(cells: list[str]) -> str:
    """One Markdown table row of cells already made literal (md_text / md_code / numbers)."""
    return "| " + " | ".join(cells) + " |"


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def inert_cell(value: object) -> object:
    """A text cell that a spreadsheet would run as a formula (starts with = + - @, tab or CR) gets a leading
    ``'``; numbers (not text) are kept as they are, so a negative drift stays a number."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 but tab and newline, DEL, C1 (CSI 0x9b among them)


def terminal_text(value: object) -> str:
    """`value` for a terminal: each control character (ESC, BEL, CR, C1, ...) shown as ``\\xNN``, never sent; tabs and
    newlines kept."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", str(value))


def console_text(value: object) -> str:
    """`value` for rich's console: its ``[`` cannot open markup (``weird[/]`` prints as typed), and its control
    characters are shown, not sent (:func:`terminal_text`)."""
    from rich.markup import escape

    return escape(terminal_text(value))
