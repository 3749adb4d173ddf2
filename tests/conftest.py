"""Shared fixtures: synthetic lm-eval runs written in lm-eval 0.4.13's exact file format.

Under pytest-xdist (`make test` runs `-n 2 --dist loadgroup`) every test file is one group, so a file's
module- and class-scoped fixtures (a built model, a finished `captrack run`) are made once, on one worker;
a test that already names its group (the Slurm tests share one cluster: `slurmcluster.ON_SLURM`) keeps it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group each test by its file for `--dist loadgroup`, unless it already carries an `xdist_group`."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
