"""Side-by-side stage workers: how many, and the progress line the parent shows for each."""

from __future__ import annotations

from pathlib import Path

from captrack.pipeline.workers import latest_line, stage_warnings
from captrack.processes import worker_count


def test_one_worker_per_usable_core_unless_told() -> None:
    assert worker_count(7, 2, env={}) == 2
    assert worker_count(1, 2, env={}) == 1  # never more workers than stages
    assert worker_count(7, 1, env={}) == 1
    assert worker_count(7, 2, env={"CAPTRACK_WORKERS": "1"}) == 1
    assert worker_count(7, 16, env={"CAPTRACK_WORKERS": "3"}) == 3
    assert worker_count(7, 16, env={"CAPTRACK_WORKERS": "zero"}) == 7  # not a count: ignored


def test_the_latest_progress_line_is_the_last_progress_bar_refresh(tmp_path: Path) -> None:
    log = tmp_path / "stage.log"
    log.write_text("loading\nRunning requests:  10%| 1/10\rRunning requests:  50%| 5/10\r\n\n")
    assert latest_line(log) == "Running requests:  50%| 5/10"
    log.write_text("")
    assert latest_line(log) == "starting"


def test_the_heartbeat_shows_training_steps_never_a_stale_warning(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("SFTTrainer step 3/16, loss 1.234, 12 s elapsed, ETA 40 s\n"
                   "[2026-11-25 14:00:00,000] [WARNING] [real_accelerator.py:1] Setting ds_accelerator to cpu\n\n")
    assert latest_line(log) == "SFTTrainer step 3/16, loss 1.234, 12 s elapsed, ETA 40 s"
    log.write_text("/x/y.py:3: UserWarning: something\n")
    assert latest_line(log) == "starting"


def test_warnings_of_all_stages_are_collected_once(tmp_path: Path) -> None:
    line = "2026-11-25:14:55:13 WARNING  [evaluator:184] pretrained=x appears to be an instruct variant"
    for name in ("a", "b"):
        (tmp_path / f"{name}.log").write_text(f"{line}\nRunning requests: 1/2\n{line}\n")
    assert stage_warnings(sorted(tmp_path.glob("*.log"))) == ["pretrained=x appears to be an instruct variant"]
