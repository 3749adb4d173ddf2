"""The work folder's layout is one object (captrack.pipeline.layout.WorkFolder): every path a run writes comes from it."""

from __future__ import annotations

from pathlib import Path

import yaml

from captrack.pipeline.layout import WorkFolder, default_workdir

ROOT = Path(__file__).parents[1]


def test_the_work_folder_tree() -> None:
    work = WorkFolder(Path("/w"))
    assert work.run("sft", 2) == Path("/w/runs/sft/seed2")
    assert work.model("sft") == Path("/w/models/sft")
    assert work.request_cache("sft", 0, "ab12") == Path("/w/cache/sft-seed0-ab12")
    assert work.marker("eval-sft-0") == Path("/w/markers/eval-sft-0.json")
    assert work.log("train-sft") == Path("/w/logs/train-sft.log")
    assert (work.store, work.new_store) == (Path("/w/store.duckdb"), Path("/w/store.tmp.duckdb"))
    assert work.lock == Path("/w/.captrack-run.lock")
    assert work.data == Path("/w/data") and work.job_spec("eval-base-0-ab").parent == work.jobs


def test_the_committed_demo_board_reads_the_store_the_layout_names() -> None:
    """leaderboards/demo/leaderboard.yaml is data, so it spells the path: it must be the one `make demo` writes."""
    board = ROOT / "leaderboards" / "demo"
    store = yaml.safe_load((board / "leaderboard.yaml").read_text())["store"]
    assert (board / store).resolve() == WorkFolder(default_workdir(ROOT, "demo")).store.resolve()
