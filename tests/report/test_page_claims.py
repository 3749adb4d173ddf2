"""Pages claim only what the statistics support, and drill-down pages show every flipped item's gold as text."""

from __future__ import annotations

import html
import re
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard

FACTS = "captrack_probe_c1_facts"
SKILLS = "captrack_probe_c1_skills"
MMLU = "captrack_mmlu_pro_subset"
HARMFUL = "captrack_probe_w1_harmful"
# A `*` next to a number or CI, or alone in a table cell: the mark for "CI excludes 0".
STAR = re.compile(r"<td[^>]*>\s*\*\s*</td>|[\d%\]]\s?\*|\|\s*\*\s*\|")


def _scores_board(tmp_path: Path) -> Path:
    scores = tmp_path / "scores.csv"
    scores.write_text(
        "model,task,metric,value,base\n"
        f"b,{FACTS},acc,0.5,\nb,{SKILLS},exact_match,0.8,\n"
        f"sft,{FACTS},acc,0.2,b\nsft,{SKILLS},exact_match,0.4,b\n"
        f"dpo,{FACTS},acc,0.45,b\ndpo,{SKILLS},exact_match,0.78,b\n"
    )
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: aggregate\nscores: {scores}\ncomparisons:\n  - base: b\n    variants:\n"
        "      - {name: sft, algorithm: SFT}\n      - {name: dpo, algorithm: DPO}\n")
    return board


def _assert_no_claims(text: str, where: str) -> None:
    assert "beyond noise" not in text, where
    assert "excludes 0" not in text and "excludes zero" not in text, where
    assert not STAR.search(text), (where, STAR.search(text))
    assert "agrees with" not in text and "drifts more than" not in text, where


def test_aggregate_only_sources_claim_no_noise_level_and_say_why(tmp_path: Path) -> None:
    board = _scores_board(tmp_path)
    build_leaderboard(board)
    for name in ("index.html", "README.md"):
        text = (board / name).read_text()
        _assert_no_claims(text, name)
        assert "no confidence intervals" in text and "no item transitions" in text, name
    assert not (board / "power.csv").exists() and not (board / "tasks").exists()
    readme = (board / "README.md").read_text()
    assert "| sft | captrack_probe_c1_facts | acc | 0.5 | 0.2 | n/a | -60.0% |" in readme  # base, variant and n shown
    out = tmp_path / "out"
    assert main(["compare", "--scores", str(tmp_path / "scores.csv"), "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    _assert_no_claims(report, "report.md")
    assert "no confidence intervals" in report


def _item_board(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    options = ["Rome", "Berlin", "Paris", "Madrid"]
    mc_docs = {i: {"question": f"q{i}", "choices": "['late', 'sell', 'lose', 'south']", "gold": "2"} for i in range(4)}
    skill_docs = {i: {"prompt": f"What is {i} + 10?", "answer": str(i + 10), "answer_type": "number"} for i in range(4)}
    letter_docs = {i: {"prompt": f"Capital of France? ({i})", "choices": options, "gold": "C", "config": "mmlu_pro.subset"}
                   for i in range(4)}
    harmful_docs = {i: {"prompt": f"harmful request {i}"} for i in range(4)}

    def tasks(good: list[int], said: str) -> list[FakeTask]:
        return [
            FakeTask(FACTS, {"acc": good}, docs=mc_docs, targets=dict.fromkeys(range(4), "2")),
            FakeTask(SKILLS, {"exact_match": good}, output_type="generate_until", docs=skill_docs,
                     targets=dict.fromkeys(range(4), ""), responses={i: f"The answer is {i + 10}." for i in range(4)}),
            FakeTask(MMLU, {"acc": good}, output_type="generate_until", docs=letter_docs,
                     targets=dict.fromkeys(range(4), "C"), responses=dict.fromkeys(range(4), said)),
            FakeTask(HARMFUL, {"unsafe_refusal": good}, output_type="generate_until", docs=harmful_docs,
                     targets=dict.fromkeys(range(4), "")),
        ]

    write_run(runs / "base", "base", tasks([1, 1, 0, 0], "Answer: C"))
    write_run(runs / "sft", "sft", tasks([0, 1, 1, 0], "Answer: B"))
    store = tmp_path / "store.duckdb"
    for name in ("base", "sft"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "items"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: items\nstore: {store}\nbootstrap: 100\ncomparisons:\n  - base: base\n    variants:\n"
        "      - {name: sft, algorithm: SFT}\n")
    return board


def _rows(page: str) -> list[list[str]]:
    """Cells of each item row: doc, variant, change, question, gold, base side, variant side, metric."""
    rows = re.findall(r'<tr data-item="1"[^>]*>(.*?)</tr>', page, re.S)
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]


def _read(page: str) -> dict[str, tuple[str, ...]]:
    """doc id -> the answers the scorer read from the base's and the variant's response (shown above each)."""
    rows = re.findall(r'<tr data-item="1"[^>]*>(.*?)</tr>', page, re.S)
    out = {}
    for row in rows:
        doc = re.search(r'<td class="num key">(\d+)</td>', row).group(1)  # type: ignore[union-attr]
        out[doc] = tuple(html.unescape(a) for a in re.findall(r'<div class="extracted">scored: <b>(.*?)</b></div>', row))
    return out


def test_every_flipped_item_shows_its_gold_and_how_it_was_scored(tmp_path: Path) -> None:
    board = _item_board(tmp_path)
    build_leaderboard(board)
    golds, extracted, scoring = {}, {}, {}
    for task in (FACTS, SKILLS, MMLU, HARMFUL):
        page = (board / "tasks" / f"{task}.html").read_text()
        rows = _rows(page)
        assert len(rows) == 2, task  # items 0 (1→0) and 2 (0→1) flipped
        for cells in rows:
            assert cells[4], f"{task}: empty gold on doc {cells[0]}"
        golds[task] = {cells[4] for cells in rows}
        extracted[task] = _read(page)
        scoring[task] = re.search(r'<ul id="scoring-list">(.*?)</ul>', page, re.S).group(1)  # type: ignore[union-attr]
    assert golds[FACTS] == {"C. lose"}  # an option index shown as letter and text
    assert golds[SKILLS] == {"10", "12"}  # the generated item's answer, though lm-eval logged an empty target
    assert golds[MMLU] == {"C. Paris"}  # a gold letter mapped to its option
    assert golds[HARMFUL] == {"(no reference answer: see how the metric is scored above)"}
    # the letter the scorer (mc_letter) read, and the number short_answer read
    assert extracted[MMLU]["0"] == ("C", "B") and extracted[SKILLS]["2"] == ("12", "12")
    assert "option log-likelihood" in scoring[FACTS]
    assert "rule-based, no model in the loop" in scoring[HARMFUL] and "refused" in scoring[HARMFUL]
    index = (board / "index.html").read_text()
    assert 'id="scoring-table"' in index and 'id="task-table"' in index
    assert (board / "power.csv").is_file() and (board / "rankings.csv").is_file()


def test_item_boards_print_what_the_items_can_detect(tmp_path: Path) -> None:
    """The power table: one row per task and metric with its group, n, base value and MDE; none without items."""
    board = _item_board(tmp_path)
    build_leaderboard(board)
    readme = (board / "README.md").read_text()
    assert "## What the items can detect" in readme
    assert "| CAN | C1 | captrack_probe_c1_facts | acc | 4 | 0.5 | " in readme  # binary: MDE in points
    assert "Tasks whose rate metric can detect a change of 10 points or less" in readme and "CAN 0, WILL 0" in readme
    assert 'id="power-table"' in (board / "index.html").read_text()
    aggregate = _scores_board(tmp_path)
    build_leaderboard(aggregate)
    assert "What the items can detect" not in (aggregate / "README.md").read_text()
