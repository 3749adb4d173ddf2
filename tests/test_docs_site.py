"""The documentation site (issue 56): it builds in strict mode (a broken link or a missing page fails), and its
generated reference pages hold every option `--help` prints and every column a writer emits."""

from __future__ import annotations

import csv
import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from captrack.cli import main

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

import gen_docs  # noqa: E402
from mkdocs_hooks import rewrite_links  # noqa: E402


def build_site(out: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the repository's site into `out` (what `make docs` builds)."""
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = build_site(out)
    assert built.returncode == 0, built.stderr[-3000:]
    return out


def _text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_site_builds_strict_with_every_section_and_generated_page(site: Path) -> None:
    for page in ("index.html", "getting-started/quickstart.html", "guides/ci-gate.html", "statistics.html",
                 "benchmarks.html", "design.html", "style.html", "contributing/recipes.html", *(
                     p.replace(".md", ".html") for p in gen_docs.GENERATED)):
        assert (site / page).is_file(), page
    assert "CapTrackCallback" in _text(site / "guides" / "drift-over-training.html")
    assert "captrack_probe_c2_logic" in _text(site / "reference" / "tasks.html")
    rows = [line.split(" | ") for line in gen_docs.tasks_page().splitlines() if line.startswith("| `captrack_")]
    assert len(rows) > 60 and all(row[2].strip() for row in rows), [row[0] for row in rows if not row[2].strip()]


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """Strict mode is what makes the build a check: a page linking to a page that does not exist fails it."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# x\n\n[gone](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nstrict: true\n")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path, capture_output=True,
                           text=True, env=os.environ | {"NO_MKDOCS_2_WARNING": "1"}, timeout=300)
    assert built.returncode != 0 and "missing.md" in built.stderr


def _help_options(words: list[str], capsys: pytest.CaptureFixture[str]) -> set[str]:
    with pytest.raises(SystemExit):
        main([*words, "--help"])
    text = capsys.readouterr().out
    options = set()
    for line in text.splitlines():
        found = re.match(r"^ {2}(-[^\s].*?)(?:\s{2,}|$)", line)
        if found:
            options.update(o.split()[0] for o in found.group(1).split(", ") if o.startswith("-"))
    return options - {"-h", "--help"}


def test_every_option_help_prints_is_in_the_generated_cli_reference(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    sections = re.split(r'<h2 id="', page)
    by_id = {s.split('"', 1)[0]: html.unescape(s) for s in sections[1:]}
    checked = 0
    for words, parser in gen_docs.commands():
        section = by_id[words.replace(" ", "-")]
        options = _help_options(words.split()[1:], capsys)
        assert options == {o for a in parser._actions for o in a.option_strings} - {"-h", "--help"}, words
        missing = sorted(o for o in options if f"<code>{o}</code>" not in section)
        assert not missing, f"{words}: {missing}"
        checked += len(options)
    assert checked > 80, checked


def _headers(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as handle:
            found[path.name] = next(csv.reader(handle))
    return found


def test_every_column_a_writer_emits_is_on_the_outputs_page(site: Path) -> None:
    """The headers captrack really writes, each column found in its file's section of the page: a comparison's
    (tests/analysis/golden, which tests/analysis/test_golden_outputs.py keeps equal to what compare writes:
    replicates, multiple-choice distributions, the compatible tables) and every committed board's (kept current by
    tests/report/test_committed_boards.py: pairs, checkpoints, algorithms, curves, a --by field)."""
    page = (site / "reference" / "outputs.html").read_text(encoding="utf-8")
    by_file = {s.split('"', 1)[0]: html.unescape(s) for s in re.split(r'<h2 id="', page)[1:]}
    folders = [ROOT / "tests" / "analysis" / "golden", *sorted(p for p in (ROOT / "leaderboards").iterdir() if p.is_dir())]
    seen = set()
    for folder in folders:
        for name, columns in _headers(folder).items():
            key = "by_FIELD.csv" if name.startswith("by_") else name
            anchor = next((a for a in by_file if a.replace("-", "").replace("_", "") ==
                           key.replace(".", "").replace("_", "").replace("-", "").lower()), None)
            assert anchor is not None, f"{folder.name}/{name}: no section on the outputs page"
            field = name[3:-4] if name.startswith("by_") else None
            missing = [c for c in columns if c != field and f"<code>{c}</code>" not in by_file[anchor]]
            assert not missing, f"{folder.name}/{name}: {missing}"
            seen.add(key)
    assert {"replicates.csv", "by_FIELD.csv", "distribution.csv", "captrack_compatible.csv", "curves.csv",
            "pairs.csv", "checkpoints.csv"} <= seen, seen


def test_links_to_repository_files_point_at_their_pages() -> None:
    assert rewrite_links("see [c](../CONTRIBUTING.md) and [r](../README.md#x)", "design.md") == \
        "see [c](contributing/recipes.md) and [r](index.md#x)"
    assert rewrite_links("[s](style.md) [o](../captrack/x.md)", "design.md") == "[s](style.md) [o](../captrack/x.md)"


def test_the_getting_started_page_in_a_real_browser(site: Path) -> None:
    """The Quickstart page as Debian's chromium shows it: the theme's script ran (navigation, copy buttons), every
    section of the site is in the navigation, and a screenshot is saved (scripts/docs_screenshots.py commits it as
    docs/img/getting-started.png)."""
    import shutil

    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("Debian chromium and chromium-driver are not installed (make test installs them)")
    from docs_screenshots import GETTING_STARTED, browser, shoot

    shots = Path(os.environ.get("CAPTRACK_SCREENSHOTS", "build/screenshots"))
    with browser(1280, 1000) as driver:
        shot = shoot(driver, site / GETTING_STARTED, shots / "docs-getting-started.png")
        heading = driver.execute_script("return document.querySelector('article h1').textContent")
        nav = driver.execute_script("return [...document.querySelectorAll('.md-nav__link')].map(a => a.textContent.trim())")
        copy_buttons = driver.execute_script("return document.querySelectorAll('button[title=\"Copy to clipboard\"]').length")
        theme_ran = driver.execute_script("return typeof document$ !== 'undefined'")
    assert heading.startswith("Quickstart") and shot.stat().st_size > 10_000
    assert {"Getting started", "Guides", "Reference", "Statistics", "Benchmarks", "Contributing", "Quickstart"} <= set(nav)
    assert theme_ran and copy_buttons >= 2
