"""Benchmark: a leaderboard of many variants (default 200 variants x 40 tasks) from a real store.

    python tests/benchmarks/bench_leaderboard.py [--variants 200 --tasks 40 --items 30 --workdir /tmp/captrack-lb]

Writes synthetic lm-eval runs (taxonomy task names, so every capability row fills), ingests
them, builds the leaderboard and prints the time of each step and the size of the pages. It
asserts nothing.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fakeruns import FakeTask, write_run
from treerss import TreePeak

from captrack.compare import board as board_module
from captrack.compare.board import build_leaderboard
from captrack.labels import VariantLabels
from captrack.results.runfiles import discover_runs
from captrack.results.store import Store
from captrack.taxonomy import load_taxonomy


def main() -> None:
    """Generate, ingest, build; print figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", type=int, default=200)
    parser.add_argument("--tasks", type=int, default=40)
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--workdir", default="/tmp/captrack-lb")
    args = parser.parse_args()
    work = Path(args.workdir)
    members = {}
    for m in load_taxonomy().members:
        members.setdefault(m.task, m.metric)
    tasks = sorted(members)[: args.tasks]
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    names = ["base"] + [f"v{i:03d}" for i in range(args.variants)]
    store_path = work / "store.duckdb"
    if not store_path.exists():
        base_p = rng.uniform(0.3, 0.8, size=len(tasks))
        for i, name in enumerate(names):
            shift = 0.0 if i == 0 else rng.normal(0, 0.1)
            fake = [FakeTask(t, {members[t]: list((rng.random(args.items) < np.clip(p + shift, 0.05, 0.95)).astype(float))},
                             output_type="generate_until") for t, p in zip(tasks, base_p, strict=True)]
            write_run(work / "runs" / name, name, fake)
        generated = time.perf_counter() - start
        with Store(store_path) as store:
            for name in names:
                store.ingest(discover_runs(work / "runs" / name), VariantLabels(name=name))
        ingested = time.perf_counter() - start - generated
        print(f"generated {len(names)} runs x {len(tasks)} tasks x {args.items} items in {generated:.1f} s; ingested in {ingested:.1f} s")
    board = work / "board"
    board.mkdir(parents=True, exist_ok=True)
    algos = ["SFT", "DPO", "RL", "merge"]
    lines = [f"title: {args.variants} variants x {len(tasks)} tasks", f"store: {store_path}", "bootstrap: 200",
             "comparisons:", "  - base: base", "    variants:"]
    lines += [f"      - {{name: {n}, algorithm: {algos[i % 4]}, family: fam{i % 5}, size: {1 + i % 3}B}}" for i, n in enumerate(names[1:])]
    (board / "leaderboard.yaml").write_text("\n".join(lines) + "\n")
    steps = _timed_steps()
    t0 = time.perf_counter()
    with TreePeak() as tree:  # the build's worker processes included
        written = build_leaderboard(board)
    built = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in written) / 2**20
    index = (board / "index.html").stat().st_size / 2**10
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"leaderboard: {len(written)} files, {size:.1f} MiB in all, index.html {index:.0f} KiB; built in {built:.1f} s "
          f"(target <= 30 s: {'PASS' if built <= 30 else 'MISS'}); peak RSS {rss:.0f} MB (this process), "
          f"{tree.peak_mb:.0f} MB (with its worker processes, sampled)")
    print("steps: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in steps.items()))


def _timed_steps() -> dict[str, float]:
    """Time the build's two steps as build_leaderboard calls them: the comparison (variants read by the worker
    processes and analysed) and the board (its tables, pages and figures)."""
    steps: dict[str, float] = {}
    for step, name in (("board_comparisons", "compare"), ("publish_board", "pages")):
        real = getattr(board_module, step)

        def timed(*args: object, _real: object = real, _name: str = name) -> object:
            start = time.perf_counter()
            try:
                return _real(*args)  # type: ignore[operator]
            finally:
                steps[_name] = time.perf_counter() - start

        setattr(board_module, step, timed)
    return steps


if __name__ == "__main__":
    main()
