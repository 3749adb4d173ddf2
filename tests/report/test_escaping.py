"""Labels people choose (variant, algorithm, family, ...) are shown literally in every output.

Markdown tables keep their shape and carry no live HTML, a CSV label cell never reads as a spreadsheet
formula (numbers stay numbers, negative drifts included), HTML is escaped and figures draw `$x$` as text.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.report.markdown import md_text
from captrack.report.writer import inert_cell

FACTS = "captrack_probe_c1_facts"
NAME = "@x|<b>bold</b>"  # a table pipe, HTML, and a spreadsheet formula start
ALGORITHM = "=1+2"
MATH = "$\\notacommand{x}$"  # mathtext would raise on this label


def _runs(tmp_path: Path) -> dict[str, Path]:
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 1, 0, 1, 1]})])
    write_run(tmp_path / "variant", "variant", [FakeTask(FACTS, {"acc": [0, 1, 0, 0, 1, 0]})])
    return {"base": tmp_path / "base", "variant": tmp_path / "variant"}


def _csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


@pytest.mark.parametrize(("text", "shown"), [
    ("a|b", "a\\|b"), ("<script>x</script>", "\\<script\\>x\\</script\\>"), ("line\nbreak", "line break"),
    ("`code`", "\\`code\\`"), ("&lt;", "\\&lt;"), ("$\\frac$", "\\$\\\\frac\\$"), ("R&D", "R&D"), ("plain-name_1", "plain-name_1"),
])
def test_markdown_labels_are_literal(text: str, shown: str) -> None:
    assert md_text(text) == shown


@pytest.mark.parametrize(("cell", "written"), [
    ("=SUM(A1)", "'=SUM(A1)"), ("+1", "'+1"), ("-SFT", "'-SFT"), ("@x", "'@x"), ("SFT", "SFT"), (-3.5, -3.5),
])
def test_csv_cells_that_would_be_formulas_are_inert(cell: object, written: object) -> None:
    assert inert_cell(cell) == written


def test_compare_outputs_show_a_hostile_label_literally(tmp_path: Path) -> None:
    runs = _runs(tmp_path / "runs")
    out = tmp_path / "out"
    assert main(["compare", "--base", str(runs["base"]), "--variant", f"{NAME}={runs['variant']}:{ALGORITHM}",
                 "--out", str(out), "--bootstrap", "0"]) == 0
    report, inputs = (out / "report.md").read_text().split("## Inputs")
    assert "<b>" not in report and "## @x|\\<b\\>bold\\</b\\> (=1+2)" in report  # a heading: its pipe is text
    assert "| @x\\|\\<b\\>bold\\</b\\> | captrack_probe_c1_facts |" in report  # a table cell: escaped
    assert inputs.split("\n")[2] == "```" and inputs.rstrip().endswith("```")  # the inputs, paths and names, are a code block
    drift = _csv(out / "drift.csv")
    assert {(r["variant"], r["algorithm"]) for r in drift} == {("'" + NAME, "'" + ALGORITHM)}
    facts = next(r for r in drift if r["task"] == FACTS)
    assert float(facts["rel_drift_pct"]) == pytest.approx(-60.0) and facts["rel_drift_pct"].startswith("-")
    assert {r["variant"] for r in _csv(out / "transitions.csv")} == {"'" + NAME}


def test_a_leaderboard_draws_and_writes_any_label(tmp_path: Path) -> None:
    runs = _runs(tmp_path / "runs")
    store = tmp_path / "s.duckdb"
    for name, folder in (("base", runs["base"]), (MATH, runs["variant"])):
        assert main(["ingest", str(folder), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(
        f"title: 'T'\nstore: {store}\nbootstrap: 50\ncomparisons:\n  - base: base\n    variants:\n"
        f"      - {{name: '{MATH}', algorithm: '-SFT | <i>x</i>', family: '=cmd', size: '+1', data: '@d'}}\n"
    )
    assert main(["leaderboard", str(board)]) == 0  # as mathtext, this label is a parse error
    assert (board / "figures" / "heatmap.png").is_file() and (board / "figures" / "f_vs_bt.svg").is_file()
    readme = (board / "README.md").read_text()
    assert "<i>" not in readme and "| \\$\\\\notacommand{x}\\$ | =cmd | +1 | -SFT \\| \\<i\\>x\\</i\\> |" in readme
    row = next(r for r in _csv(board / "checkpoints.csv") if r["variant"] == MATH)
    assert (row["algorithm"], row["family"], row["size"], row["data"]) == ("'-SFT | <i>x</i>", "'=cmd", "'+1", "'@d")
    html = (board / "index.html").read_text()
    assert "<i>x</i>" not in html and "-SFT | &lt;i&gt;x&lt;/i&gt;" in html
