"""Drill-down pages show the answer the metric's own scorer read: scoring it again gives the page's value.

The pages once showed a second extraction: for "... she gives 8 - 3 = 5 cookies away.\\nThe remaining
cookies are 8 - 5 = " (gold 5) the scorer read 5 and scored 1, the page showed "-5".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run
from rescoring import rescore_pages

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.metrics import score
from captrack.probes import generate
from captrack.report.html import page as html_page

TASK = "captrack_probe_c2_word_problems"
REPO = Path(__file__).resolve().parents[2]


def _responses(docs: list[dict], variant: bool) -> dict[int, str]:
    out = {}
    for i, doc in enumerate(docs):
        gold = int(float(doc["answer"]))
        if i == 0 and variant:  # the response: the scorer reads the first number of the short segment
            out[i] = f"She gives 8 - 3 = {gold} cookies away.\nThe remaining cookies are 8 - {gold} = "
        elif i == 0:
            out[i] = f"Answer: {gold + 2}"
        elif (i % 3 == 0) == variant:
            out[i] = f"Answer: {gold + 1}"
        else:
            out[i] = f"The answer is {gold}."
    return out


def test_every_shown_answer_scores_as_the_page_says(tmp_path: Path) -> None:
    docs = generate("word_problems", 1234, 12)
    store = tmp_path / "store.duckdb"
    for name, variant in (("base", False), ("sft", True)):
        responses = _responses(docs, variant)
        values = [score("short_answer", doc, responses[i])["exact_match"] for i, doc in enumerate(docs)]
        task = FakeTask(TASK, {"exact_match": values}, output_type="generate_until", docs=dict(enumerate(docs)),
                        targets=dict.fromkeys(range(len(docs)), ""), responses=responses)
        write_run(tmp_path / "runs" / name, name, [task])
        assert main(["ingest", str(tmp_path / "runs" / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 50\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    (board / "tasks").mkdir()
    (board / "tasks" / "captrack_probe_gone.html").write_text(html_page("gone", "a task no longer on the board"))  # captrack's
    build_leaderboard(board)
    assert not (board / "tasks" / "captrack_probe_gone.html").exists()  # stale pages are removed
    found = rescore_pages(board, store)
    assert found.checked >= 8 and found.mismatches == []
    page = (board / "tasks" / f"{TASK}.html").read_text()
    gold = int(float(docs[0]["answer"]))
    assert '<td class="num key">0</td><td class="key key2">sft</td><td class="change">gained</td>' in page  # the issue item
    assert f"-{gold}</pre>" not in page  # the old second extraction read the last number, negated


@pytest.mark.slow
def test_the_demo_pages_show_what_was_scored() -> None:
    """On the demo's own pages (needs `make demo`'s store; CAPTRACK_DEMO_STORE points elsewhere)."""
    store = Path(os.environ.get("CAPTRACK_DEMO_STORE", REPO / "runs" / "demo" / "store.duckdb"))
    if not store.is_file():
        pytest.skip(f"no demo store at {store}: run `make demo` first")
    found = rescore_pages(REPO / "leaderboards" / "demo", store)
    print(f"demo drill-down: {found.checked} answers re-scored, {found.whole} whole-response metrics")
    assert found.checked > 0 and found.mismatches == []
