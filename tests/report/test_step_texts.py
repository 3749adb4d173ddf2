"""The steps page shows every flipped item's question and its answers before and at the step, escaped, so an
item that flipped mid-training (and not at the end point the task pages show) can be read."""

from __future__ import annotations

import html
import re
from pathlib import Path

from fakeruns import FakeTask, write_run

from captrack.cli import main

SKILLS = "captrack_probe_c1_skills"
STEPS = (10, 20)
N = 12


def _skills(shift: int, label: str) -> FakeTask:
    """Items right or wrong by (i + shift) % 3: each step flips some of them; the answers say whose they are."""
    values = [1.0 if (i + shift) % 3 else 0.0 for i in range(N)]
    return FakeTask(SKILLS, {"exact_match": values}, output_type="generate_until",
                    doc_text={i: f"Q{i}: is <b>{i}</b> & more?" for i in range(N)},
                    responses={i: f"<i>answer {i} from {label}</i>" for i in range(N)})


def _board(tmp_path: Path) -> Path:
    store = tmp_path / "s.duckdb"
    write_run(tmp_path / "base", "base", [_skills(0, "base")])
    assert main(["ingest", str(tmp_path / "base"), "--store", str(store), "--name", "base"]) == 0
    for shift, step in enumerate(STEPS, start=1):
        write_run(tmp_path / f"sft{step}", f"sft-{step}", [_skills(shift, f"step {step}")])
        assert main(["ingest", str(tmp_path / f"sft{step}"), "--store", str(store), "--name", "sft",
                     "--algorithm", "SFT", "--step", str(step)]) == 0
    board = tmp_path / "board"
    board.mkdir()
    (board / "leaderboard.yaml").write_text(f"title: steps\nstore: {store}\nbootstrap: 50\ncomparisons:\n"
                                            "  - base: base\n    variants:\n      - {name: sft, algorithm: SFT}\n")
    assert main(["leaderboard", str(board)]) == 0
    return board


def test_each_flipped_item_shows_its_question_and_answers_before_and_at_its_step(tmp_path: Path) -> None:
    page = (_board(tmp_path) / "steps.html").read_text()
    assert "<i>answer" not in page and "is <b>" not in page  # the texts are escaped
    for step, before in ((10, "base"), (20, "step 10")):
        section = page.split(f"step {step}, ", 1)[1].split("<h2", 1)[0]
        flipped = re.findall(r"<tr><td>.*?</td><td>exact_match</td><td>(\d+)</td>", section)
        assert flipped, f"no flipped item listed at step {step}"
        for doc in map(int, flipped):  # the question, the answer before the step and the answer at it
            assert html.escape(f"Q{doc}: is <b>{doc}</b> & more?", quote=False) in section
            assert html.escape(f"<i>answer {doc} from {before}</i>", quote=False) in section
            assert html.escape(f"<i>answer {doc} from step {step}</i>", quote=False) in section
