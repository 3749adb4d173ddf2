"""A checkpoint sweep through the slurm executor on a real single-node Slurm cluster (scripts/slurm-up.sh, `make slurm`):
its evaluations go to Slurm as one array, at most `array_parallelism` tasks at once, and the board is the local one.

The reference is the same experiment through the local executor in the same folder (every path in the board the
same). Slurm's own record of each array task is its job completion log (jobcomp/filetxt: ArrayJobId, ArrayTaskId,
StartTime, EndTime); the cluster keeps no accounting database, so sacct has nothing to say here.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from tinymodel import build_tiny_model

ROOT = Path(__file__).resolve().parents[2]
CAPTRACK = str(Path(sys.executable).with_name("captrack"))


def _slurm_up() -> bool:
    return subprocess.run([str(ROOT / "scripts" / "slurm-up.sh"), "--check"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not _slurm_up(), reason="no Slurm cluster answers here: `make slurm` as root starts one "
                                                         "(scripts/slurm-up.sh: slurm-wlm and munge from Debian)")]

SWEEP = """name: slurm-sweep
workdir: work
leaderboard: board
tasks: [captrack_probe_c1_facts]
limit: 4
batch_size: 4
base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}
variants:
  - {{name: sft, checkpoints: [{steps}], algorithm: SFT, family: tiny}}
executor: {{name: slurm, cpus: 1, time: 30, poll_s: 1, evaluate: {{gpus: 0, array_parallelism: 1}}}}
"""


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base and two saved checkpoints of a variant (tiny real models): a three-checkpoint sweep."""
    root = tmp_path_factory.mktemp("sweep")
    texts = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold"] * 20
    build_tiny_model(root / "models" / "base", texts, seed=0)
    for step in (1, 2):
        build_tiny_model(root / "models" / "sft" / f"checkpoint-{step}", texts, seed=step)
    return root


def _fresh(place: Path) -> Path:
    folder = place / "run"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    steps = ", ".join(str(place / "models" / "sft" / f"checkpoint-{s}") for s in (1, 2))
    (folder / "exp.yaml").write_text(SWEEP.format(base=place / "models" / "base", steps=steps))
    return folder


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "COLUMNS": "200"}
    return subprocess.run([CAPTRACK, "run", "exp.yaml", *args], cwd=folder, capture_output=True, text=True, timeout=900,
                          env=env)


def _outputs(folder: Path) -> dict[str, bytes]:
    """The board's files and every CSV of the work folder, by path."""
    files = [*(folder / "board").rglob("*"), *(folder / "work").rglob("*.csv")]
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(files) if p.is_file()}


def _array_tasks(folder: Path) -> list[dict[str, str]]:
    """Slurm's completion record of every array task run from `folder` (the last record of each task)."""
    from captrack.pipeline.executors.slurm_queue import completion_log

    log = completion_log()
    assert log is not None, "the cluster keeps no job completion log (scripts/slurm-up.sh sets jobcomp/filetxt)"
    tasks: dict[tuple[str, str], dict[str, str]] = {}
    for line in log.read_text(errors="replace").splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("WorkDir") == str(folder) and fields.get("JobState") not in ("PENDING", "REQUEUED"):
            tasks[(fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", ""))] = fields
    return sorted(tasks.values(), key=lambda f: f["StartTime"])


def test_a_three_checkpoint_sweep_is_one_array_run_one_task_at_a_time_and_gives_the_local_board(place: Path) -> None:
    folder = _fresh(place)
    local = _run(folder, "--executor", "local")
    assert local.returncode == 0, local.stdout + local.stderr
    expected = _outputs(folder)
    folder = _fresh(place)
    done = _run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    tasks = _array_tasks(folder)
    shown = [(t["ArrayJobId"], t["ArrayTaskId"], t["JobState"], t["StartTime"], t["EndTime"]) for t in tasks]
    print("Slurm's job completion log (array job, task, state, start, end):\n" + "\n".join(map(str, shown)))
    assert len({t["ArrayJobId"] for t in tasks}) == 1 and len(tasks) == 3, shown  # one array job, three tasks
    assert sorted(t["ArrayTaskId"] for t in tasks) == ["0", "1", "2"]
    assert [t["JobState"] for t in tasks] == ["COMPLETED"] * 3
    for before, after in itertools.pairwise(tasks):  # %1: a task starts once the one before it ended
        assert after["StartTime"] >= before["EndTime"], shown
    assert "as one Slurm array" in done.stdout and "at most 1 at once" in done.stdout
    assert _outputs(folder) == expected
    assert any(name.endswith(".csv") for name in expected)
