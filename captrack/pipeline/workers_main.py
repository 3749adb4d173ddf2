"""A worker process of `captrack run`: runs one stage of a pickled experiment (started by workers.run_side_by_side).

    python -m captrack.pipeline.workers_main EXPERIMENT.pickle "evaluate base (seed 0)"   # one stage (internal)

Its own module so that captrack.pipeline.workers (imported by the runner) does not import the runner back.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path
from typing import Any

from captrack.pipeline.workers import PARENT_ENV, die_with_parent

__all__: list[str] = []


def _main(argv: list[str]) -> int:
    """Run one stage of a pickled experiment in this process (the resolve stage first, when it has one)."""
    parent = os.environ.get(PARENT_ENV, "")
    die_with_parent(int(parent) if parent.isdigit() else None)
    from rich.console import Console

    from captrack.pipeline.cpu import prepare_openmp
    from captrack.pipeline.runner import plan

    prepare_openmp()
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("CAPTRACK_THREADS", "1"))))
    experiment: Any = pickle.loads(Path(argv[0]).read_bytes())
    stages = plan(experiment, Console(stderr=True))
    for stage in stages:
        if stage.rerun_when_reused:  # e.g. the base model's local path, which later stages read
            stage.action()
    matching = [s for s in stages if s.title == argv[1]]
    if not matching:
        print(f"no stage {argv[1]!r} in this experiment", file=sys.stderr)
        return 2
    matching[0].action()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the runner says it once, for all
        sys.exit(130)
