"""A capability of two small members at the margin, end to end: `captrack ingest` + `captrack compare`, and how often
capabilities.csv calls it `equivalent` when it lost exactly the margin (issue 53: ≤ 6% at 2 × 80 items).

C1 = facts (acc) + skills (exact_match), N items each at base rate 0.6. Every variant forgets 5% of each task's items
(each of the base's correct items lost with probability 0.05·N/correct, none gained): a true change of −5 points,
the equivalence margin, so `equivalent` is a false claim. One store holds the base and every variant; one compare reads them all. The
script also checks that capabilities.csv's C1 row is combine_changes on the same arrays, and counts the variants
the summed Agresti–Min Wald interval it replaced would have called equivalent (exact: 9.39% at 2 × 80; the
stratified score interval's exact rate is 3.9%, `bench_calibration.py --sections members`).

    python tests/benchmarks/capability_tost_cli.py                    # 300 variants, 80 items per task
    python tests/benchmarks/capability_tost_cli.py --variants 100 --items 95
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

sys.path.insert(0, str(Path(__file__).parents[1]))
from fakeruns import C1_PAIR, run_quietly, write_arrays

from captrack.analysis.intervals import z_quantile
from captrack.analysis.verdicts import combine_changes, verdict

TASKS = C1_PAIR






def _summed_wald(base: dict[str, np.ndarray], values: dict[str, np.ndarray]) -> str:
    """The verdict of the summed Agresti–Min Wald interval that combine_changes used before issue 53."""
    deltas, variances = [], []
    for task, _, _ in TASKS:
        d = 100.0 * (values[task] - base[task])
        adjusted = d.sum() / (d.size + 2.0)
        variances.append(max((float((d * d).sum()) + 1e4) / (d.size + 2.0) - adjusted**2, 0.0) / (d.size + 2.0))
        deltas.append(float(d.mean()))
    delta, se = float(np.mean(deltas)), math.sqrt(sum(variances)) / len(deltas)
    q95, q90 = z_quantile(0.95), z_quantile(0.90)
    return verdict((delta - q95 * se, delta + q95 * se), (delta - q90 * se, delta + q90 * se), 5.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", type=int, default=300)
    parser.add_argument("--items", type=int, default=80)
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
        expected: dict[str, tuple[str, float, float, str]] = {}
        for v in range(args.variants):
            values = {task: np.where((base[task] == 1) & (rng.random(args.items) < 0.05 * args.items / base[task].sum()),
                                     0.0, base[task]) for task, _, _ in TASKS}  # losses ~ Bin(correct, ·): a mean of 5%
            write_arrays(root / f"v{v}", f"v{v}", values)
            change = combine_changes([(task, base[task], values[task], "binary", "higher") for task, _, _ in TASKS], 5.0)
            expected[f"v{v}"] = (change.verdict, change.ci90[0], change.ci90[1], _summed_wald(base, values))
        run_quietly(["ingest", *[str(root / v) for v in expected], "--store", store])  # each run under its own model name
        out = root / "out"
        run_quietly(["compare", "--store", store, "--base", "base", *[a for v in expected for a in ("--variant", v)],
              "--out", str(out), "--bootstrap", "0"])
        caps = pd.read_csv(out / "capabilities.csv")
        rows = caps[(caps["level"] == "capability") & (caps["key"] == "C1")].set_index("variant")
    agree = sum(rows.loc[v, "verdict"] == want and math.isclose(rows.loc[v, "change_ci90_low"], low, abs_tol=1e-7)
                and math.isclose(rows.loc[v, "change_ci90_high"], high, abs_tol=1e-7)
                for v, (want, low, high, _) in expected.items())
    n = args.variants
    equivalent = int((rows["verdict"] == "equivalent").sum())
    before = sum(old == "equivalent" for *_, old in expected.values())
    p = equivalent / n
    print(f"{n} variants that lost exactly the margin (-5 points), C1 = 2 tasks x {args.items} items, through "
          "ingest + compare:")
    print(f"  capabilities.csv C1 equivalent: {equivalent}/{n} = {100 * p:.1f}% "
          f"(MC SE {100 * math.sqrt(max(p * (1 - p), 1e-12) / n):.1f}); target <= 6%")
    print(f"  the summed Wald interval it replaced: {before}/{n} = {100 * before / n:.1f}%")
    print(f"  regressed (power at the margin): {int((rows['verdict'] == 'regressed').sum())}/{n}")
    print(f"  CLI equals combine_changes on {agree}/{n} variants")
    print(f"  {time.perf_counter() - start:.0f} s")
    return 0 if agree == n and p <= 0.06 else 1


if __name__ == "__main__":
    sys.exit(main())
