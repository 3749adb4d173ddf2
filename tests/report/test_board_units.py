"""One unit per page (issue 56): a board built from fixture runs has a forest plot, a task × algorithm matrix and a
power hint beside each verdict, and none of its pages prints a relative quantity in points or percentage points, or
a change as a rounded 0.0 beside a CI that excludes 0; the committed demo board holds to the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run
from forest_screenshot import CHROMIUM, DRIVER, chromium, shoot
from unit_scan import page_problems, scan_board

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.report.pictures import VERDICT_COLOURS

ROOT = Path(__file__).resolve().parents[2]
FACTS = "captrack_probe_c1_facts"
LOGIC = "captrack_probe_c2_logic"


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two variants on 60 paired items per task: sft loses 18 facts (regressed), dpo barely moves (built once)."""
    tmp_path = tmp_path_factory.mktemp("units")
    runs = tmp_path / "runs"
    base = [1] * 40 + [0] * 20
    logic = [1, 0] * 30
    variants = {"sft": ([0] * 18 + [1] * 22 + [0] * 20, [0, 0, *logic[2:]]),
                "dpo": ([1] * 40 + [1] + [0] * 19, logic)}
    write_run(runs / "base", "base", [FakeTask(FACTS, {"acc": base}), FakeTask(LOGIC, {"acc": logic})])
    for name, (facts, reasoning) in variants.items():
        write_run(runs / name, name, [FakeTask(FACTS, {"acc": facts}), FakeTask(LOGIC, {"acc": reasoning})])
    store = tmp_path / "store.duckdb"
    for name in ("base", *variants):
        assert main(["ingest", str(runs / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: units\nstore: {store}\nbootstrap: 200\ncomparisons:\n  - base: base\n    variants:\n"
        "      - {name: sft, algorithm: SFT}\n      - {name: dpo, algorithm: DPO}\n")
    build_leaderboard(board)
    return board


BAD = [  # (text, why)
    ("DPO − RL = +2.0 percentage points, 95% CI [-0.6, +3.6]", "a difference of relative drifts in percentage points"),
    ("relative drift +4.1 points", "relative drift in points"),
    ("| +12.0% points |", "a percentage in points"),
    ("Δ 0.0 points [+0.1, +0.3] → improved at ±5", "a rounded 0.0 beside a CI above 0"),
    ("| C1 | 0.0 [-0.9, -0.04] ▼ regressed |", "a rounded 0.0 beside a CI below 0"),
    ('<td class="num" title="...">0.0 ▲</td>', "a rounded 0.0 marked improved"),
]
GOOD = ["Δ 0.0 points [-0.3, +0.3] → equivalent at ±5", "+0.04 points [+0.01, +0.08] → improved at ±5",
        "relative drift (% of base, CapTrack-compatible)", "F_adj 0.8% of items forgotten", "| 0.0% | n/a |",
        "these 400 items detect ≥ 9.9 points; ~1,564 would detect 5"]


@pytest.mark.parametrize(("text", "why"), BAD)
def test_the_scan_finds_each_mixed_unit(text: str, why: str) -> None:
    assert page_problems(text, "page"), why


def test_the_scan_passes_what_is_said_in_one_unit() -> None:
    assert [p for text in GOOD for p in page_problems(text, "page")] == []


def test_a_board_of_fixture_runs_prints_one_unit_per_page_with_its_pictures(board: Path) -> None:
    assert scan_board(board) == []
    for stem in ("forest", "task_algorithm"):
        assert (board / "figures" / f"{stem}.png").stat().st_size > 0 and (board / "figures" / f"{stem}.svg").is_file()
    index, readme = (board / "index.html").read_text(), (board / "README.md").read_text()
    assert 'id="forest"' in index and 'id="task-algorithm-table"' in index
    assert "![forest plot](figures/forest.png)" in readme and "| task / metric | DPO Δ (mean) | SFT Δ (mean) |" in readme
    # sft lost 18 of 40 facts: -30.0 points, its verdict regressed, in the matrix and beside its power hint
    assert f"| {FACTS} / acc | " in readme and "-30.0" in readme
    rows = re.findall(r"<tr><td>(.*?)</tr>", index.split('id="task-table"')[1].split("</table>")[0], re.S)
    assert len(rows) == 4 and all(re.search(r"<td>these 60 items detect ≥ \d+\.\d points", r) for r in rows)
    assert "| what these items detect (80% power) |" in readme
    assert "relative drift (% of base, CapTrack-compatible)" in index


def test_the_committed_demo_board_has_its_pictures_and_one_unit_per_page() -> None:
    demo = ROOT / "leaderboards" / "demo"
    assert (demo / "figures" / "forest.png").is_file() and (demo / "figures" / "task_algorithm.png").is_file(), (
        "the committed demo board predates the forest plot: run `make demo` and commit leaderboards/demo")
    assert scan_board(demo) == []


_COUNT = """const [img, rgb, tolerance] = arguments; const c = document.createElement('canvas');
c.width = img.naturalWidth; c.height = img.naturalHeight; const g = c.getContext('2d'); g.drawImage(img, 0, 0);
const d = g.getImageData(0, 0, c.width, c.height).data; let n = 0;
for (let i = 0; i < d.length; i += 4) { if (Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) <= tolerance) n++; }
return n;"""


@pytest.mark.skipif(not (CHROMIUM and DRIVER), reason="Debian chromium and chromium-driver are not installed (make test installs them)")
def test_the_pictures_render_in_a_real_browser(board: Path, tmp_path: Path) -> None:
    """Chromium loads both figures on the index page at a readable width; the forest plot it shows holds the margin
    band and the regressed colour (sft's facts), read back from its pixels; the docs' screenshot script works."""
    from selenium.webdriver.common.by import By

    driver = chromium()
    try:
        shot = shoot(driver, board, tmp_path / "forest-plot.png")  # waits for the forest plot to load
        shown = {}
        for key in ("forest", "task-algorithm"):
            image = driver.find_element(By.CSS_SELECTOR, f"#{key} + figure img")
            assert driver.execute_script("return arguments[0].complete && arguments[0].naturalWidth > 0", image), key
            shown[key] = image
            assert image.size["width"] >= 500, (key, image.size)
        forest = shown["forest"]
        assert driver.execute_script(_COUNT, forest, hex_rgb("#e3e8ef"), 6) > 2000  # the ± margin band
        assert driver.execute_script(_COUNT, forest, hex_rgb(VERDICT_COLOURS["regressed"]), 30) > 50  # sft regressed
        assert driver.execute_script(_COUNT, forest, hex_rgb(VERDICT_COLOURS["improved"]), 30) == 0  # nothing improved
    finally:
        driver.quit()
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 5000


def hex_rgb(colour: str) -> list[int]:
    return [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
