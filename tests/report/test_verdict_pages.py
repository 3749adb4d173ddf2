"""Pages and report.md say one thing one way (issue 39).

- A verdict is printed with the change it was decided on, in its own units, and that change's 95% CI:
  "+15.0 points [+10.7, +20.7] → improved at ±5", read from drift.csv / capabilities.csv, never recomputed.
- Significant (`*`, "significant tasks") means exactly: verdict regressed, improved or changed.
- Colours (table cells and the heatmap) come from the verdict's change; a rise of a lower-is-better
  metric is worse (red).
- No "-0.0", no "+0.0", no CI of width zero printed as if it were evidence.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard
from captrack.report import figures, leaderboard_pages

PREMISE, FACTS, LOGIC, WORDS = ("captrack_probe_w2_false_premise", "captrack_probe_c1_facts", "captrack_probe_c2_logic",
                                "captrack_probe_c2_word_problems")
# sft: overreach 0.2 → 0.4 (worse), facts 0.6 → 0.75 (better), logic unchanged;
# dpo: 4 of 30 word problems forgotten and none gained (a bootstrap CI of the relative drift excludes 0 in most
#      resamplings while a paired test of 4 discordant items does not: the old pages starred it and counted it not).
RUNS = {
    "base": {"overreach": [1] * 40 + [0] * 160, "acc": [1] * 120 + [0] * 80, "logic": [1] * 100 + [0] * 100,
             "words": [1] * 10 + [0] * 20},
    "sft": {"overreach": [1] * 80 + [0] * 120, "acc": [1] * 150 + [0] * 50, "logic": [1] * 100 + [0] * 100,
            "words": [1] * 10 + [0] * 20},
    "dpo": {"overreach": [1] * 40 + [0] * 160, "acc": [1] * 120 + [0] * 80, "logic": [1] * 100 + [0] * 100,
            "words": [0] * 4 + [1] * 6 + [0] * 20},
}
SIGNIFICANT = ("regressed", "improved", "changed")  # the verdicts whose 95% CI of the change excludes 0
# A signed number that rounds to zero, or a CI whose printed ends are one number.
NEGATIVE_ZERO = re.compile(r"[-+−]0\.0+(?![0-9])")
ZERO_CI = re.compile(r"\[\s*([-+]?\d+\.\d+%?),\s*\1\s*\]")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One board and one `captrack compare` of the same runs, with what the heatmap was drawn from."""
    root = tmp_path_factory.mktemp("verdicts")
    store = root / "store.duckdb"
    for name, v in RUNS.items():
        write_run(root / "runs" / name, name, [
            FakeTask(PREMISE, {"overreach": v["overreach"]}, output_type="generate_until"),
            FakeTask(FACTS, {"acc": v["acc"]}), FakeTask(LOGIC, {"acc": v["logic"]}),
            FakeTask(WORDS, {"exact_match": v["words"]}, output_type="generate_until")])
        assert main(["ingest", str(root / "runs" / name), "--store", str(store), "--name", name]) == 0
    board = root / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 200\ntarget: {FACTS}\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n"
                                            "      - {name: dpo, algorithm: DPO}\n")
    drawn: dict[str, Any] = {}
    real = figures.heatmap_figure

    def spy(matrix: pd.DataFrame, significant: pd.DataFrame, out: Path, **kwargs: Any) -> list[Path]:
        drawn.update(kwargs, matrix=matrix)
        return real(matrix, significant, out, **kwargs)

    patch = pytest.MonkeyPatch()
    patch.setattr(leaderboard_pages.figures, "heatmap_figure", spy)
    patch.setenv("CAPTRACK_WORKERS", "1")  # figures drawn in this process (captrack.report.background), by the spy
    try:
        build_leaderboard(board)
    finally:
        patch.undo()
    out = root / "out"
    assert main(["compare", "--store", str(store), "--base", "base", "--variant", "sft:SFT", "--variant", "dpo:DPO",
                 "--out", str(out), "--bootstrap", "200"]) == 0
    return {"board": board, "out": out, "drawn": drawn,
            "drift": pd.read_csv(board / "drift.csv", keep_default_na=False, na_values=[""]),
            "caps": pd.read_csv(board / "capabilities.csv", keep_default_na=False, na_values=[""])}


def _expected(r: pd.Series) -> str:
    """The verdict text a row must show, from its own columns (the values here are far from zero)."""
    return (f"{r['oriented_change']:+.1f} {'points' if r.get('change_unit', 'points') == 'points' else '% of base'} "
            f"[{r['change_ci_low']:+.1f}, {r['change_ci_high']:+.1f}] → {r['verdict']} at ±5")


def _rows(page: str, table_id: str) -> list[list[str]]:
    """The text of each cell of each body row of one table."""
    body = re.search(rf'<table id="{table_id}"[^>]*>.*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, table_id
    return [[html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", body.group(1), re.S)]


def test_a_verdict_is_printed_with_its_change_in_points_and_that_changes_ci(built: dict[str, Any]) -> None:
    drift = built["drift"].set_index(["variant", "task"])
    facts, overreach = drift.loc[("sft", FACTS)], drift.loc[("sft", PREMISE)]
    assert facts["verdict"] == "improved" and overreach["verdict"] == "regressed"
    assert overreach["oriented_change"] < 0  # overreach rose: worse
    index = html.unescape((built["board"] / "index.html").read_text())
    readme = (built["board"] / "README.md").read_text()
    report = (built["out"] / "report.md").read_text()
    for row in (facts, overreach):
        said = _expected(row)
        assert said in index and said in readme and said in report, said
    # the observed change: the base and variant values beside it, and Δ = 100 × their difference
    assert "| sft | captrack_probe_c1_facts | acc | 0.6 | 0.75 | 200 | " + _expected(facts) in readme
    assert facts["oriented_change"] == pytest.approx(100 * (facts["variant_value"] - facts["base_value"]), abs=0.05)
    # relative drift keeps a column of its own, labelled, and is never printed with a CI beside a verdict
    assert "relative drift (% of base, CapTrack-compatible)" in index
    assert "| relative drift (% of base, CapTrack-compatible) |" in readme and "| relative drift (% of base, CapTrack-compatible) |" in report
    assert not re.search(r"CI [-+]?\d+\.\d%", index + readme + report)
    caps = built["caps"]
    c1 = caps[(caps["variant"] == "sft") & (caps["key"] == "C1")].iloc[0]
    grid = f"| C1 Parametric knowledge & skills | {c1['oriented_change']:+.1f} [{c1['change_ci_low']:+.1f}, {c1['change_ci_high']:+.1f}] ▲ improved |"
    assert grid in readme  # the capability grid: Δ [95% CI], then the verdict
    task_page = html.unescape((built["board"] / "tasks" / f"{FACTS}.html").read_text())
    assert _expected(facts) in task_page  # the task page heads with the same change


def test_a_star_and_significant_tasks_mean_exactly_a_regressed_improved_or_changed_verdict(built: dict[str, Any]) -> None:
    drift = built["drift"]
    significant = drift["verdict"].isin(SIGNIFICANT)
    index = (built["board"] / "index.html").read_text()
    rows = _rows(index, "task-table")
    header = re.search(r'<table id="task-table".*?<thead>(.*?)</thead>', index, re.S).group(1)  # type: ignore[union-attr]
    star = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th[^>]*>(.*?)</th>", header)].index("*")
    by_row = {(r[0], r[1]): r[star] == "*" for r in rows}
    assert by_row == {(v, t): s for v, t, s in zip(drift["variant"], drift["task"], significant, strict=True)}
    for variant in ("sft", "dpo"):
        count = int(significant[drift["variant"] == variant].sum())
        judged = int((drift["variant"] == variant).sum())
        checkpoint = next(r for r in _rows(index, "checkpoint-table") if r[0] == variant)
        assert checkpoint[-1] == f"{count} / {judged}", checkpoint
        checkpoints = (built["board"] / "README.md").read_text().split("## Checkpoints")[1].split("\n## ")[0]
        readme_row = next(line for line in checkpoints.splitlines() if line.startswith(f"| {variant} |"))
        assert readme_row.endswith(f"| {count} / {judged} |"), readme_row
        section = (built["out"] / "report.md").read_text().split(f"## {variant} (")[1]
        assert f"significant tasks (verdict regressed, improved or changed): {count} of {judged}." in section
        stars = sum(1 for line in section.split("### Per task")[1].split("\n## ")[0].splitlines()
                    if line.startswith("| captrack_") and line.split(" | ")[6] == "*")
        assert stars == count
    for text in (index, (built["board"] / "README.md").read_text(), (built["out"] / "report.md").read_text()):
        assert "beyond noise" not in text and "q < 0.05" not in text  # no second meaning of significant


def test_the_notes_say_one_rule_and_the_method_once(built: dict[str, Any]) -> None:
    method = "95% score CI of the paired change (Tango 1998) for binary metrics; adjusted Wald otherwise"
    rule = ("Significant (marked *, counted in \"significant tasks\") means one thing: the verdict is regressed, improved "
            "or changed, i.e. the 95% CI of Δ excludes 0.")
    for text in (html.unescape((built["board"] / "index.html").read_text()), (built["board"] / "README.md").read_text(),
                 (built["out"] / "report.md").read_text()):
        assert text.count(method) == 1 and text.count(rule) == 1
        assert "bootstrap CI exists and excludes 0" not in text and "Agresti–Min" not in text


def test_colours_follow_the_verdicts_change(built: dict[str, Any]) -> None:
    drawn, caps = built["drawn"], built["caps"]
    colours = drawn["colors"]
    for r in caps[(caps["level"] == "capability") & (caps["n_metrics"] > 0)].itertuples():
        label = next(i for i in colours.index if i.startswith(f"{r.key} "))
        assert colours.loc[label, r.variant] == pytest.approx(r.oriented_change), (r.key, r.variant)
        assert drawn["matrix"].loc[label, r.variant] == pytest.approx(r.oriented_change)
    assert drawn["unit"] == "points"  # the colour bar: "Δ vs base, + better (points)"
    w2 = next(i for i in colours.index if i.startswith("W2 "))
    assert colours.loc[w2, "sft"] < 0  # overreach rose: red
    index = (built["board"] / "index.html").read_text()
    rise = re.findall(r'<td class="num ([a-z]*)" data-sort="100">\+100\.0%</td>', index)  # overreach 0.2 → 0.4, relative
    gain = re.findall(r'<td class="num ([a-z]*)" data-sort="25">\+25\.0%</td>', index)  # acc 0.6 → 0.75, relative
    assert rise and set(rise) == {"neg"} and gain and set(gain) == {"pos"}
    assert '<td class="verdict v-regressed"' in index and '<td class="verdict v-improved"' in index


def test_nothing_prints_minus_zero_or_a_ci_of_no_width(built: dict[str, Any]) -> None:
    """sft left logic unchanged (0 of 200 items flipped): its change prints 0.0, its CI has a width."""
    texts = {"index.html": html.unescape((built["board"] / "index.html").read_text()),
             "README.md": (built["board"] / "README.md").read_text(), "report.md": (built["out"] / "report.md").read_text()}
    texts |= {f"tasks/{p.name}": html.unescape(p.read_text()) for p in (built["board"] / "tasks").glob("*.html")}
    for name, text in texts.items():
        assert not NEGATIVE_ZERO.search(text), (name, NEGATIVE_ZERO.search(text))
        assert not ZERO_CI.search(text), (name, ZERO_CI.search(text))
    assert "| sft | captrack_probe_c2_logic | acc | 0.5 | 0.5 | 200 | 0.0 points [" in texts["README.md"]


def test_headlines_count_no_improvement_as_drift_and_name_only_the_boards_algorithms(built: dict[str, Any]) -> None:
    readme = (built["board"] / "README.md").read_text()
    said = readme.split("## What changed")[1].split("\n## ")[0]
    assert not re.search(r"\bRL\b", said)  # this board has SFT and DPO only
    assert "drifts more than" not in said and "mean |drift|" not in said
    sft = next(line for line in said.splitlines() if line.startswith("- sft (SFT)"))
    assert "regressed W2" in sft and "improved C1" in sft and "fell" not in sft and "drift" not in sft


def test_the_pairs_table_shows_forgetting_beyond_chance_with_its_ci_beside_the_published_form(built: dict[str, Any]) -> None:
    pairs = pd.read_csv(built["board"] / "pairs.csv")
    transitions = pd.read_csv(built["out"] / "transitions.csv")
    row = pairs[(pairs["variant"] == "sft") & (pairs["task"] == FACTS)].iloc[0]
    same = transitions[(transitions["variant"] == "sft") & (transitions["task"] == FACTS)].iloc[0]
    assert row["forgetting_excess"] == pytest.approx(same["forgetting_excess"])  # read, never recomputed
    assert row["forgetting_excess_ci_low"] < row["forgetting_excess"] < row["forgetting_excess_ci_high"]
    index = html.unescape((built["board"] / "index.html").read_text())
    shown = f"{100 * row['forgetting_excess']:+.1f} [{100 * row['forgetting_excess_ci_low']:+.1f}, "
    assert "F − E₀₀ [95% CI]" in index and shown in index
    assert "n/a (one base run)" in index  # no floor without a second base seed, and the page says why
