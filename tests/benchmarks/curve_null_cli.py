"""Null trajectories end to end: `captrack ingest --step` + `captrack compare`, and how often curve_summary.csv's
first_step_significant is set for a model that never changed (issue 53: ≤ 6% at K = 10).

Each trajectory is a variant of its own: C1 = facts (acc) + skills (exact_match), N items each, base rate 0.6, and
at every step the base with fresh 5% + 5% symmetric flips (as bench_calibration.py's `curves` section). One store
holds the base and every trajectory; one compare reads them all. The script also checks that the CLI's
first_step_significant is the window scan (captrack.analysis.curve_windows.scan_windows) recomputed here from the
simulated items and the steps' capability verdicts and p-values (combine_changes), and counts the trajectories
that Holm over the steps and each step's own 5% rule, the rules it replaced, would have flagged.

    python tests/benchmarks/curve_null_cli.py                       # 20 trajectories x 10 steps, 300 items per task
    python tests/benchmarks/curve_null_cli.py --trajectories 10 --steps 20
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import beta

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakeruns import C1_PAIR, run_quietly, write_arrays

from captrack.analysis.curve_stats import first_significant_step
from captrack.analysis.curve_windows import MemberSteps, scan_windows
from captrack.analysis.verdicts import combine_changes

TASKS = C1_PAIR




def _checkpoint(rng: np.random.Generator, base: np.ndarray) -> np.ndarray:
    u = rng.random(base.size)
    return np.where(base == 1, (u >= 0.05 / 0.6).astype(float), (u < 0.05 / 0.4).astype(float))




def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trajectories", type=int, default=20)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--seed", type=int, default=53)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        store = str(root / "s.duckdb")
        base = {task: (rng.random(args.items) < 0.6).astype(float) for task, _, _ in TASKS}
        write_arrays(root / "base", "base", base)
        run_quietly(["ingest", str(root / "base"), "--store", store, "--name", "base"])
        expected: dict[str, tuple[int | None, bool, bool]] = {}
        steps = [10 * (k + 1) for k in range(args.steps)]
        for t in range(args.trajectories):
            verdicts, p_values = [], []
            changes = {task: np.empty((args.items, args.steps)) for task, _, _ in TASKS}
            for s, step in enumerate(steps):
                values = {task: _checkpoint(rng, base[task]) for task, _, _ in TASKS}
                for task, _, _ in TASKS:
                    changes[task][:, s] = 100.0 * (values[task] - base[task])
                write_arrays(root / f"v{t}-{step}", f"v{t}-{step}", values)
                run_quietly(["ingest", str(root / f"v{t}-{step}"), "--store", store, "--name", f"v{t}", "--step", str(step)])
                change = combine_changes([(task, base[task], values[task], "binary", "higher") for task, _, _ in TASKS],
                                         5.0)
                verdicts.append(change.verdict)
                p_values.append(change.p_value)
            raw = any(v in ("regressed", "improved") for v in verdicts)
            members = [MemberSteps(changes[task], [f"{task}/{i}" for i in range(args.items)]) for task, _, _ in TASKS]
            holm = first_significant_step(steps, verdicts, p_values) is not None
            expected[f"v{t}"] = (scan_windows(steps, members, verdicts, p_values).first_step, raw, holm)
        out = root / "out"
        run_quietly(["compare", "--store", store, "--base", "base", *[a for v in expected for a in ("--variant", v)],
              "--out", str(out), "--bootstrap", "0"])
        summary = pd.read_csv(out / "curve_summary.csv")
        got = summary[summary["capability"] == "C1"].set_index("variant")["first_step_significant"]
    agree = sum((None if pd.isna(got[v]) else int(got[v])) == first for v, (first, _, _) in expected.items())
    flagged = int(got.notna().sum())
    raw, holm = sum(r for _, r, _ in expected.values()), sum(h for _, _, h in expected.values())
    n = args.trajectories
    p = flagged / n
    print(f"{n} null trajectories x K = {args.steps} steps, C1 = 2 tasks x {args.items} items, through ingest --step + compare:")
    print(f"  first_step_significant set (window scan over K): {flagged}/{n} = {100 * p:.1f}% "
          f"(MC SE {100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f}; one-sided 95% upper bound "
          f"{100 * float(beta.ppf(0.95, flagged + 1, n - flagged)):.1f}%); target <= 6%")
    print(f"  the rules it replaced would have flagged: Holm over the steps {holm}/{n} = {100 * holm / n:.1f}%, "
          f"each step's own 5% rule {raw}/{n} = {100 * raw / n:.1f}%")
    print(f"  CLI equals the window scan recomputed from the simulated items on {agree}/{n} trajectories")
    print(f"  {time.perf_counter() - start:.0f} s")
    return 0 if agree == n else 1


if __name__ == "__main__":
    sys.exit(main())
