"""Leaderboards: files, byte-identical regeneration, and a real headless Chromium on the pages."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard

FACTS = "captrack_probe_c1_facts"
IF = "captrack_probe_h1_constraints"
PAYLOADS = {
    0: "<script>window.__pwned = 'script'</script>",
    1: '</textarea><img src="x" onerror="window.__pwned = \'onerror\'">',
    2: '<a id="evil" href="javascript:window.__pwned=\'link\'">click me</a>',
}


def _leaderboard(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    base_if = [1, 1, 1, 0, 1, 0]
    write_run(runs / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 0, 0, 1, 1, 0, 1]}),
                                      FakeTask(IF, {"pass_all": base_if}, output_type="generate_until")])
    for name, facts, inst in (("sft", [0, 0, 0, 1, 1, 0, 0, 1], [0, 0, 0, 0, 1, 0]),
                              ("dpo", [1, 1, 0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 0])):
        write_run(runs / name, name, [FakeTask(FACTS, {"acc": facts}),
                                      FakeTask(IF, {"pass_all": inst}, output_type="generate_until", responses=PAYLOADS)])
    store = tmp_path / "store.duckdb"
    for name in ("base", "sft", "dpo"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: 'Test <board>'\ndescription: two variants\nstore: {store}\nbootstrap: 200\n"
        "comparisons:\n  - base: base\n    variants:\n"
        "      - {name: sft, algorithm: SFT, family: toy, size: 1M}\n"
        "      - {name: dpo, algorithm: DPO, family: toy, size: 1M}\n"
    )
    return board


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "leaderboard.yaml"}


def test_files_and_byte_identical_regeneration(tmp_path: Path) -> None:
    board = _leaderboard(tmp_path)
    build_leaderboard(board)
    first = _digest(board)
    for name in ("index.html", "README.md", "capabilities.csv", "checkpoints.csv", "figures/heatmap.png",
                 "figures/heatmap.svg", "figures/f_vs_bt.png", "figures/algorithms.svg", f"tasks/{IF}.html"):
        assert name in first, name
    build_leaderboard(board)
    assert _digest(board) == first
    readme = (board / "README.md").read_text()
    assert "## What changed" in readme and "- sft (SFT), 2 capabilities at margin ±5: " in readme
    assert "- dpo (DPO), 2 capabilities at margin ±5: " in readme
    # 8 and 6 items: the paired bootstrap CI of mean |relative drift| SFT − DPO includes 0, so no ranking is claimed.
    assert "The data cannot rank DPO and SFT" in readme and "agrees with the published expectation" not in readme
    assert 'id="findings-list"' in (board / "index.html").read_text()
    page = (board / "tasks" / f"{IF}.html").read_text()
    assert "<script>window.__pwned" not in page and "&lt;script&gt;window.__pwned" in page
    assert 'href="javascript:' not in page


def test_one_variant_from_scores(tmp_path: Path) -> None:
    scores = tmp_path / "scores.csv"
    scores.write_text("model,task,metric,value,base\nb,captrack_probe_c1_facts,acc,0.5,\nv,captrack_probe_c1_facts,acc,0.4,b\n")
    board = tmp_path / "b"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: one\nscores: {scores}\ncomparisons:\n  - base: b\n    variants:\n      - {{name: v, algorithm: SFT}}\n")
    build_leaderboard(board)
    assert "-20.0%" in (board / "README.md").read_text()


CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser():  # type: ignore[no-untyped-def]
    if not (CHROMIUM and DRIVER):
        pytest.skip("Debian chromium and chromium-driver are not installed (make test installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1280,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    yield driver
    driver.quit()


def _shots() -> Path:
    folder = Path(os.environ.get("CAPTRACK_SCREENSHOTS", "build/screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_pages_in_a_real_browser(tmp_path: Path, browser) -> None:  # type: ignore[no-untyped-def]
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    board = _leaderboard(tmp_path)
    build_leaderboard(board)
    browser.get((board / "index.html").as_uri())
    images = browser.find_elements(By.TAG_NAME, "img")
    assert images and all(browser.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", i) for i in images)

    table = browser.find_element(By.ID, "checkpoint-table")
    def first_column() -> list[str]:
        return [r.find_elements(By.TAG_NAME, "td")[0].text for r in table.find_elements(By.CSS_SELECTOR, "tbody tr")]
    header = table.find_elements(By.TAG_NAME, "th")[0]
    header.click()
    assert first_column() == ["dpo", "sft"]
    header.click()
    assert first_column() == ["sft", "dpo"]
    browser.save_screenshot(str(_shots() / "leaderboard-index.png"))

    browser.get((board / "tasks" / f"{IF}.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "tr[data-item]")
    assert len(rows) == 4  # sft forgot 3 items, dpo gained 1
    Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=change]")).select_by_value("gained")
    visible = [r for r in rows if r.is_displayed()]
    assert len(visible) == 1 and "dpo" in visible[0].text
    Select(browser.find_element(By.CSS_SELECTOR, "[data-filter=change]")).select_by_value("")
    browser.find_element(By.CSS_SELECTOR, "[data-filter=text]").send_keys("onerror")
    assert [r.is_displayed() for r in rows].count(True) == 1

    # Untrusted model output renders as text and runs nothing, even when clicked.
    assert browser.execute_script("return window.__pwned === undefined")
    shown_text = browser.execute_script("return document.getElementById('items').textContent")
    assert "<script>window.__pwned" in shown_text and "javascript:window.__pwned" in shown_text
    assert not browser.find_elements(By.ID, "evil")
    browser.set_window_size(390, 844)  # phone width
    browser.save_screenshot(str(_shots() / "leaderboard-task-phone.png"))
    assert browser.execute_script("return window.__pwned === undefined")


SYSTEM = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"


def _chat_board(tmp_path: Path) -> Path:
    """A board whose drill-down holds chat-template prompts, long responses and short golds, as real runs do."""
    questions = {i: (f"{SYSTEM}<|im_start|>user\nQuestion {i}: a train leaves at 9:{10 + i} and travels 120 km at "
                     f"60 km/h; when does it arrive? Give the time.<|im_end|>\n<|im_start|>assistant\n") for i in range(6)}
    long = {i: "Let us think step by step. " * 25 + f"The answer is 11:{10 + i}." for i in range(6)}
    gold = {i: f"11:{10 + i}" for i in range(6)}
    runs = tmp_path / "runs"
    task = "captrack_probe_c2_word_problems"
    for name, values in (("base", [1, 1, 1, 0, 1, 0]), ("sft-with-a-long-variant-name", [0, 0, 1, 1, 0, 0])):
        write_run(runs / name, name, [FakeTask(task, {"exact_match": values}, output_type="generate_until",
                                               doc_text=questions, responses=long, targets=gold)])
    store = tmp_path / "store.duckdb"
    for name in ("base", "sft-with-a-long-variant-name"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: chat\nstore: {store}\nbootstrap: 100\ncomparisons:\n  - base: base\n    variants:\n"
        "      - {name: sft-with-a-long-variant-name, algorithm: SFT}\n")
    build_leaderboard(board)
    return board


_BOX = "const r = arguments[0].getBoundingClientRect(); return [r.left, r.right, r.width, r.height];"


def test_drill_down_is_readable_in_a_real_browser(tmp_path: Path, browser) -> None:  # type: ignore[no-untyped-def]
    """Measured in Chromium at 1,400 px: question first, columns sized to their content, the table scrolls inside
    its box with the doc and variant columns pinned, and the page itself never scrolls sideways."""
    from selenium.webdriver.common.by import By

    board = _chat_board(tmp_path)
    browser.set_window_size(1400, 1000)
    browser.get((board / "tasks" / "captrack_probe_c2_word_problems.html").as_uri())
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1400
    header = {th.text.split(" ")[0].rstrip(":"): th for th in browser.find_elements(By.CSS_SELECTOR, "#items th")}
    widths = {name: browser.execute_script(_BOX, th)[2] for name, th in header.items()}
    assert widths["question"] >= 400 and widths["gold"] >= 130 and widths["base"] >= 340 and widths["variant"] >= 130, widths
    row = browser.find_elements(By.CSS_SELECTOR, "tr[data-item]")[0]
    assert browser.execute_script(_BOX, row)[3] <= 300  # a row is a few lines, not one letter per line
    question = row.find_element(By.CSS_SELECTOR, "td.question pre")
    assert question.text.startswith("Question ") and "SmolLM" not in question.text  # the question, not the template
    folded = row.find_element(By.CSS_SELECTOR, "details.preamble")
    assert folded.get_attribute("open") is None and "SmolLM" in folded.get_attribute("textContent")
    browser.save_screenshot(str(_shots() / "drilldown-1400.png"))

    box = browser.find_element(By.CSS_SELECTOR, ".scroll:has(#items)")
    assert browser.execute_script("return arguments[0].scrollWidth > arguments[0].clientWidth", box)  # scrolls inside
    browser.execute_script("arguments[0].scrollLeft = arguments[0].scrollWidth", box)
    left = browser.execute_script(_BOX, box)[0]
    doc_cell, variant_cell = row.find_elements(By.TAG_NAME, "td")[:2]
    assert abs(browser.execute_script(_BOX, doc_cell)[0] - left) <= 2  # pinned while scrolled to the far right
    assert abs(browser.execute_script(_BOX, variant_cell)[0] - browser.execute_script(_BOX, doc_cell)[1]) <= 2
    browser.save_screenshot(str(_shots() / "drilldown-1400-scrolled.png"))

    browser.get((board / "index.html").as_uri())
    assert browser.execute_script("return document.documentElement.scrollWidth") <= 1400
    for box in browser.find_elements(By.CSS_SELECTOR, ".scroll"):  # every table fits, or scrolls with its key column pinned
        fits = browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", box)
        first = box.find_element(By.CSS_SELECTOR, "tbody td")
        assert fits or browser.execute_script("return getComputedStyle(arguments[0]).position", first) == "sticky"
    browser.save_screenshot(str(_shots() / "leaderboard-index-1400.png"))


def test_a_ci_of_width_zero_is_never_shown_as_certainty(tmp_path: Path) -> None:
    """No item flipped: every bootstrap resample of the relative drift gives 0, and the pages say so instead of
    "[+0.0%, +0.0%]"; the verdict's own CI has a width, and its change prints 0.0, never -0.0 or +0.0."""
    runs = tmp_path / "runs"
    same = [1, 0, 1, 1, 0, 1]
    write_run(runs / "base", "base", [FakeTask(FACTS, {"acc": same})])
    write_run(runs / "sft", "sft", [FakeTask(FACTS, {"acc": same})], date_id="2026-01-02T00-00-00.000000")
    store = tmp_path / "store.duckdb"
    for name in ("base", "sft"):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 100\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    build_leaderboard(board)
    readme, index = (board / "README.md").read_text(), (board / "index.html").read_text()
    out = tmp_path / "out"
    assert main(["compare", "--base", str(runs / "base"), "--variant", f"sft={runs / 'sft'}", "--out", str(out),
                 "--bootstrap", "100"]) == 0
    report = (out / "report.md").read_text()
    for text in (readme, index, report):
        assert not re.search(r"\[\s*([-+]?\d+\.\d+%?),\s*\1\s*\]", text)  # no "[+0.0, +0.0]", with or without %
        assert not re.search(r"[-+]0\.0+(?![0-9])", text)  # no "-0.0", no "+0.0"
    assert "| C1 Parametric knowledge & skills | 0.0 [" in readme
    # one checkpoint of SFT: no algorithm-level CI at all (issue 53), and the page says why
    assert "| SFT | C1 | 1 | 0.0% | n/a |" in readme and "SFT has one checkpoint" in readme and "SFT has one checkpoint" in index
    assert "| sft | captrack_probe_c1_facts | acc | 0.6667 | 0.6667 | 6 | 0.0 points [" in readme
