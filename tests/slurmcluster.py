"""The Slurm tests' guard: whether the single-node cluster of scripts/slurm-up.sh answers here (`make slurm`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

__all__ = ["ON_SLURM", "slurm_up"]

_SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "slurm-up.sh"


def slurm_up() -> bool:
    """True when `scripts/slurm-up.sh --check` finds the cluster's daemons answering."""
    return subprocess.run([str(_SCRIPT), "--check"], capture_output=True).returncode == 0


ON_SLURM = [pytest.mark.slow,
            pytest.mark.skipif(not slurm_up(), reason="no Slurm cluster answers here: `make slurm` as root starts one "
                                                      "(scripts/slurm-up.sh: slurm-wlm and munge from Debian)")]
"""The marks of a test module that needs the cluster (slow: real jobs; under pytest-xdist every file naming it runs on one worker: tests/conftest.py)."""
