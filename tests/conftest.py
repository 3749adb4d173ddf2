"""Shared fixtures: synthetic lm-eval runs written in lm-eval 0.4.13's exact file format.

Under pytest-xdist (`make test` runs `-n 2 --dist loadfile`) every test file is one unit of work, so a file's
module- and class-scoped fixtures (a built model, a finished `captrack run`) are made once, on one worker; the
files that use the single-node Slurm cluster (they import `slurmcluster.ON_SLURM`) are one unit together, so
no two of them submit jobs at once. (xdist 3.8's `xdist_group` marks do nothing under pytest 9.2, which keeps a
node's id elsewhere: the unit is chosen here, by a scheduler of our own.)
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

_ROOT = Path(__file__).resolve().parents[1]


@cache
def _uses_the_slurm_cluster(path: str) -> bool:
    try:
        return "ON_SLURM" in (_ROOT / path).read_text(encoding="utf-8")
    except OSError:
        return False


def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """`--dist loadfile`, with every Slurm test file in one unit (other modes: xdist's own scheduler)."""
    if config.getoption("dist", "no") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class FilesAndOneCluster(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "the Slurm cluster" if _uses_the_slurm_cluster(path) else path

    return FilesAndOneCluster(config, log)
