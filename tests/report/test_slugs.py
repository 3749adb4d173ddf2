"""Page names and anchors: two different names never share a page or an anchor (``dpo-1``/``dpo_1``, ``a b``/``a_b``)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.report.over_training import flip_anchor
from captrack.report.slugs import anchor, page_slug, task_page_name

TASKS = ("a b", "a_b")
VARIANTS = ("dpo-1", "dpo_1")


def test_slugs_are_readable_and_injective() -> None:
    names = ["a b", "a_b", "a-b", "a.b", "a/b", "dpo-1", "dpo_1", "dpo 1", "A b", "ünï", "..", ".hidden", "x" * 3]
    assert len({page_slug(n) for n in names}) == len(names)
    assert page_slug("captrack_probe_c1_facts") == "captrack_probe_c1_facts" and page_slug("mmlu-pro") == "mmlu-pro"
    assert page_slug("a b").startswith("a_b-h") and task_page_name("a b") == page_slug("a b") + ".html"
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", page_slug(n)) for n in names)
    assert flip_anchor("dpo-1", 40, "W1") != flip_anchor("dpo_1", 40, "W1")
    assert flip_anchor("sft", 40, "W1") == "flips-sft-40-W1"  # safe names stay as they were
    assert anchor("by", "a-1", "b") != anchor("by", "a", "1-b")  # parts joined by "-" cannot run together


def _board(tmp_path: Path) -> Path:
    runs, store = tmp_path / "runs", tmp_path / "store.duckdb"
    values = {"base": [1, 1, 0, 0, 1, 1, 0, 1], "dpo-1": [0, 0, 0, 1, 1, 0, 0, 1], "dpo_1": [1, 1, 1, 1, 1, 1, 1, 1]}
    for name, acc in values.items():
        shift = 0 if name == "base" else 1
        write_run(runs / name, name, [FakeTask(TASKS[0], {"acc": acc}),
                                      FakeTask(TASKS[1], {"acc": acc[shift:] + acc[:shift]})])
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: slugs\ndescription: colliding names\nstore: {store}\nbootstrap: 50\n"
        "comparisons:\n  - base: base\n    variants:\n"
        "      - {name: dpo-1, algorithm: DPO}\n      - {name: dpo_1, algorithm: DPO}\n")
    return board


def test_colliding_task_and_variant_names_get_their_own_pages_and_anchors(tmp_path: Path) -> None:
    board = _board(tmp_path)
    build_leaderboard(board)
    pages = sorted(p.name for p in (board / "tasks").glob("*.html"))
    assert len(pages) == 2 and pages == sorted(task_page_name(t) for t in TASKS)
    index = (board / "index.html").read_text()
    links = dict(re.findall(r'<li><a href="tasks/([^"]+)">([^<]+)</a></li>', index))
    assert sorted(html.unescape(t) for t in links.values()) == sorted(TASKS)  # the link says the task's own name
    for target, text in links.items():  # and leads to that task's page, not the other one's
        page = (board / "tasks" / html.unescape(target)).read_text()
        title = re.search(r"<h1>(.*?)</h1>", page, re.S)
        assert title and html.unescape(text) in html.unescape(title.group(1))
        other = next(t for t in TASKS if t != html.unescape(text))
        assert html.escape(other) not in title.group(1)
    for path in [board / "index.html", *(board / "tasks").glob("*.html")]:
        ids = re.findall(r'\bid="([^"]+)"', path.read_text())
        assert len(ids) == len(set(ids)), path.name
