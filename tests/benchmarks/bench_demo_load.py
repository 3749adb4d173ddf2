"""The quick demo (`captrack run --quick`) idle and next to CPU hogs: prints both wall times and their ratio.

    python tests/benchmarks/bench_demo_load.py [--hogs 2] [--experiment leaderboards/demo/experiment.yaml]

Each measurement starts from an empty quick workdir (the dequantized base model stays cached), so
training, evaluation, ingest, compare and the leaderboard all run. The hogs are plain Python busy
loops, one process each, started before and killed after the loaded run. Target (issue 19): loaded
wall time <= 2.5x idle. It asserts nothing; it prints figures.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _quick_workdir(experiment: Path) -> Path:
    sys.path.insert(0, str(ROOT))
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.quick_run import quick

    return quick(load_experiment(experiment)).workdir


def _run(experiment: Path) -> float:
    shutil.rmtree(_quick_workdir(experiment), ignore_errors=True)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "CAPTRACK_THREADS")}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "captrack.cli", "run", str(experiment), "--quick"], check=True, env=env,
                   cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hogs", type=int, default=2)
    parser.add_argument("--experiment", type=Path, default=ROOT / "leaderboards" / "demo" / "experiment.yaml")
    args = parser.parse_args()
    print(f"cores usable: {len(os.sched_getaffinity(0))}; load before: {os.getloadavg()[0]:.2f}", flush=True)
    idle = _run(args.experiment)
    print(f"idle:   {idle:7.1f} s", flush=True)
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        time.sleep(5)  # let the load average see them
        loaded = _run(args.experiment)
    finally:
        for hog in hogs:
            hog.kill()
    print(f"loaded: {loaded:7.1f} s  (with {args.hogs} busy processes)")
    print(f"ratio:  {loaded / idle:.2f}x  (target <= 2.5x)")


if __name__ == "__main__":
    main()
