"""The Slurm tests' guard: whether the single-node cluster of scripts/slurm-up.sh answers here (`make slurm`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

__all__ = ["ON_SLURM", "TWO_TINY_CHECKPOINTS", "array_tasks", "slurm_up"]

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm-up.sh"


TWO_TINY_CHECKPOINTS = """name: slurm-check
workdir: work
leaderboard: board
tasks: [captrack_probe_c1_facts]
limit: 6
batch_size: 4
base: {{name: base, model_args: {{pretrained: {base}}}, family: tiny}}
variants:
  - {{name: other, model_args: {{pretrained: {other}}}, algorithm: SFT, family: tiny}}
{trained}executor: {{name: slurm, gpus: 0, cpus: 1, time: 30, poll_s: 1}}
"""
"""An experiment of two tiny checkpoints (`base`, `other`: folders or hub ids) evaluated as Slurm jobs; `trained`: extra
variant lines (a training through Slurm) or ""."""

def slurm_up() -> bool:
    """True when `scripts/slurm-up.sh --check` finds the cluster's daemons answering."""
    return subprocess.run([str(_SCRIPT), "--check"], capture_output=True).returncode == 0


ON_SLURM = [pytest.mark.slow,
            pytest.mark.skipif(not slurm_up(), reason="no Slurm cluster answers here: `make slurm` as root starts one "
                                                      "(scripts/slurm-up.sh: slurm-wlm and munge from Debian)")]
"""The marks of a test module that needs the cluster (slow: real jobs; under pytest-xdist every file naming it runs on one worker: tests/conftest.py)."""


def array_tasks(folder: Path) -> list[dict[str, str]]:
    """Slurm's completion record of every array task run from `folder` (the last final record of each task), in the
    order they started."""
    from captrack.pipeline.executors.slurm_queue import completion_log

    log = completion_log()
    assert log is not None, "the cluster keeps no job completion log (scripts/slurm-up.sh sets jobcomp/filetxt)"
    tasks: dict[tuple[str, str], dict[str, str]] = {}
    for line in log.read_text(errors="replace").splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if fields.get("WorkDir") == str(folder) and fields.get("JobState") not in ("PENDING", "REQUEUED"):
            tasks[(fields.get("ArrayJobId", ""), fields.get("ArrayTaskId", ""))] = fields
    return sorted(tasks.values(), key=lambda f: f["StartTime"])
