"""Page names and HTML anchors from names: readable, and never shared by two different names.

A name that is already slug-safe is its own slug; any other name gets its readable form plus a short
hash of the exact name, so ``dpo-1`` / ``dpo_1`` and ``a b`` / ``a_b`` never share a page or an anchor.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["anchor", "page_slug", "task_page_name"]

_PAGE_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_PART_SAFE = re.compile(r"[A-Za-z0-9_.]+")  # no "-": anchors join their parts with it


def _hash(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def page_slug(name: str) -> str:
    """A file-name-safe slug of `name`: `name` itself when safe, else its readable form + ``-`` + a hash of it."""
    if _PAGE_SAFE.fullmatch(name):
        return name
    readable = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).lstrip(".-") or "_"  # no hidden file, no option-like name
    return f"{readable}-h{_hash(name)}"


def _part(name: str) -> str:
    if _PART_SAFE.fullmatch(name):
        return name
    return f"{re.sub(r'[^A-Za-z0-9_.]+', '_', name)}_h{_hash(name)}"


def anchor(prefix: str, *parts: object) -> str:
    """An HTML id ``PREFIX-PART-PART...``: each part itself when safe (letters, digits, ``_`` and ``.``),
    else its readable form + a hash of it, so different parts never give the same id."""
    return "-".join([prefix, *(_part(str(p)) for p in parts)])


def task_page_name(task: str) -> str:
    """The file name of `task`'s drill-down page under ``tasks/`` (one page per task, never shared)."""
    return f"{page_slug(task)}.html"
