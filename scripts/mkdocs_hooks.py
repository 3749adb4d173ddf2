"""mkdocs hooks (mkdocs.yml `hooks:`): the reference pages are generated from the code at every build
(scripts/gen_docs.py), never committed, so they cannot drift from the parser, the schemas or the writers.
CONTRIBUTING.md (at the repository's root, where people look for it) becomes the page contributing/recipes.md,
and a link from a page to a repository file the site holds (../CONTRIBUTING.md, ../README.md) is pointed at
that page."""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from gen_docs import pages  # noqa: E402

MIRRORED = {"CONTRIBUTING.md": "contributing/recipes.md", "README.md": "index.md"}
"""Repository files (from the root) -> the site page that stands for them."""
_LINK = re.compile(r"\]\(([^)\s#]+\.md)(#[^)\s]*)?\)")


def _repo_path(page: str, target: str) -> str:
    """The repository path (from the root) a page's relative link points at: pages live under docs/."""
    return posixpath.normpath(posixpath.join("docs", posixpath.dirname(page), target))


def rewrite_links(markdown: str, page: str) -> str:
    """Links leaving docs/ for a mirrored file point at its page; links inside docs/ are left as written."""

    def replace(found: re.Match[str]) -> str:
        target, anchor = found.group(1), found.group(2) or ""
        repo = _repo_path(page, target)
        if repo.startswith("docs/") or "://" in target:
            return found.group(0)
        mirrored = MIRRORED.get(repo)
        if mirrored is None:
            return found.group(0)
        return f"]({posixpath.relpath(mirrored, posixpath.dirname(page) or '.')}{anchor})"

    return _LINK.sub(replace, markdown)


def contributing_page() -> str:
    """contributing/recipes.md: CONTRIBUTING.md, its links to docs/ pointed at the site's pages."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    return re.sub(r"\]\(docs/([^)]+)\)", r"](../\1)", text)


def on_files(files: Any, config: Any) -> Any:
    """Add each generated page (and the contributing recipes) to the site's files."""
    from mkdocs.structure.files import File

    generated = pages() | {"contributing/recipes.md": contributing_page()}
    for path, text in generated.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Point links to mirrored repository files at their pages."""
    return rewrite_links(markdown, page.file.src_uri)
