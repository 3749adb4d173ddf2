"""Side-by-side stage workers: how many, and the progress line the parent shows for each."""

from __future__ import annotations

from pathlib import Path

from captrack.pipeline.workers import _latest_line, worker_count


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
    assert _latest_line(log) == "Running requests:  50%| 5/10"
    log.write_text("")
    assert _latest_line(log) == ""
