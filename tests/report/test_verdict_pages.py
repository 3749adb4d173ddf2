"""Pages colour the oriented change: a rise of a lower-is-better metric is drawn as worse (red), everywhere."""

from __future__ import annotations

import re
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.cli import main
from captrack.compare.board import build_leaderboard

PREMISE, FACTS = "captrack_probe_w2_false_premise", "captrack_probe_c1_facts"


def test_an_overreach_rise_is_red_and_marked_regressed(tmp_path: Path) -> None:
    store = tmp_path / "store.duckdb"
    for name, overreach, acc in (("base", [1] * 40 + [0] * 160, [1] * 120 + [0] * 80),
                                 ("sft", [1] * 80 + [0] * 120, [1] * 150 + [0] * 50)):
        write_run(tmp_path / "runs" / name, name, [FakeTask(PREMISE, {"overreach": overreach}, output_type="generate_until"),
                                                   FakeTask(FACTS, {"acc": acc})])
        assert main(["ingest", str(tmp_path / "runs" / name), "--store", str(store), "--name", name]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: t\nstore: {store}\nbootstrap: 200\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    build_leaderboard(board)
    index = (board / "index.html").read_text()
    rise = re.findall(r'<td class="num ([a-z]*)" data-sort="100">\+100\.0%</td>', index)  # overreach 0.2 → 0.4
    gain = re.findall(r'<td class="num ([a-z]*)" data-sort="25">\+25\.0%</td>', index)  # acc 0.6 → 0.75
    assert rise and set(rise) == {"neg"}, rise  # worse, although the value rose
    assert gain and set(gain) == {"pos"}, gain
    assert '<td class="verdict v-regressed">regressed</td>' in index and '<td class="verdict v-improved">improved</td>' in index
    readme = (board / "README.md").read_text()
    assert "+100.0% ▼ regressed" in readme and "+25.0% ▲ improved" in readme
    assert "sft, verdicts at margin ±5" in readme and "regressed W2" in readme and "improved C1" in readme
