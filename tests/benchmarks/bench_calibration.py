"""Calibration of every verdict, interval, flag and gate captrack prints, by simulation through compare's code.

Each row of the table is one cell of a grid (n, base rate, flip rates, one-sided and symmetric flips, member
tasks that are forms of the same items, clusters, small n·p0, know-or-guess models) with the rate it
measures, its Monte-Carlo standard error (0 where the figure is exact), the target and whether it holds:

- `type1`: P(regressed) (per side) when nothing changed, through verdicts.paired_change; target ≤ 2.6%.
- `coverage95`: P(the 95% CI holds the true change); target ≥ 93%.
- `tost`: P(equivalent) when the true change is the margin (−5 points); target ≤ 5.5% (n ≥ 50).
- `flag`: P(`*`, a verdict whose 95% CI excludes 0, either side) when nothing changed; target ≤ 5%.
- `ratio_coverage`: coverage of the relative-drift CI of a 0/1 metric (intervals.ratio_interval); ≥ 93%.
- `cap_type1` / `cap_coverage95`: a capability of 4 forms of the same 500 items (combine_changes with their
  source ids); targets ≤ 3% per side (the symmetric null's two sides pooled) and ≥ 93%.
- `gate_fwer`: P(`--fail-on regressed` fails an unchanged variant with 14 capabilities) through
  verdicts.failing_cells; target ≤ 5%.
- `cluster_coverage95`: paired_change with cluster labels (`--cluster`), 6 clusters and 20; ≥ 93%.
- `excess_bias`: mean of F − E00 (Transitions.forgetting_excess), points, under pure guessing and under shared
  knowledge; target |mean| ≤ 0.3. `fadj_bias` shows the published, clipped F_adj beside it (no target).
- `mde_power`: P(the verdict calls a change of exactly the planned MDE), power.mde_binary; target 75–86%.

Binary cells of independent items are also computed exactly, by enumerating every (gains, losses) table
with intervals.score_interval (the vectorised twin of the limits paired_change uses): `exact` rows.

    python tests/benchmarks/bench_calibration.py            # the full grid (R = 2,000; a few minutes)
    python tests/benchmarks/bench_calibration.py --reps 400 # quicker, wider MC SEs
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binom

from captrack.analysis.intervals import ratio_interval, score_interval
from captrack.analysis.power import mde_binary
from captrack.analysis.transitions import Transitions, count_transitions
from captrack.analysis.verdicts import combine_changes, failing_cells, paired_change

MARGIN = 5.0


@dataclass
class Row:
    """One cell's measured rate with its Monte-Carlo SE and target."""

    check: str
    cell: str
    value: float  # percent (points for the bias rows)
    mcse: float
    target: str
    holds: bool


def _rate(hits: int, reps: int) -> tuple[float, float]:
    p = hits / reps
    return 100.0 * p, 100.0 * math.sqrt(max(p * (1.0 - p), 1e-12) / reps)


# ---- binary cells of independent items -------------------------------------------------------------------------

def _tables(n: int, gain: float, loss: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (gains, losses) table of n items with non-negligible probability, and its probability."""
    flips = gain + loss
    discordant = np.arange(n + 1)
    weight = binom.pmf(discordant, n, flips)
    gains, losses, probs = [], [], []
    for d, w in zip(discordant[weight > 1e-13], weight[weight > 1e-13], strict=True):
        g = np.arange(d + 1)
        pg = binom.pmf(g, d, gain / flips if flips else 0.5) * w
        keep = pg > 1e-15
        gains.append(g[keep]), losses.append(d - g[keep]), probs.append(pg[keep])
    return np.concatenate(gains), np.concatenate(losses), np.concatenate(probs)


def exact_binary(n: int, gain: float, loss: float) -> dict[str, float]:
    """Exact P(regressed), P(improved), coverage of the 95% CI and P(equivalent) of the verdict rule."""
    g, lo, prob = _tables(n, gain, loss)
    low95, high95 = (100 * x for x in score_interval(g, lo, n, 0.95))
    low90, high90 = (100 * x for x in score_interval(g, lo, n, 0.90))
    truth = 100.0 * (gain - loss)
    significant = (low95 > 0) | (high95 < 0)
    equivalent = ~significant & (low90 > -MARGIN) & (high90 < MARGIN)
    return {"regressed": 100 * prob[high95 < 0].sum(), "improved": 100 * prob[low95 > 0].sum(),
            "coverage95": 100 * prob[(low95 <= truth) & (truth <= high95)].sum(), "equivalent": 100 * prob[equivalent].sum()}


def _simulate_pair(rng: np.random.Generator, n: int, p0: float, gain: float, loss: float) -> tuple[np.ndarray, np.ndarray]:
    """Base outcomes at rate p0; a share `loss` of all items goes 1→0 and `gain` 0→1 (as shares of the items)."""
    base = (rng.random(n) < p0).astype(float)
    u = rng.random(n)
    variant = base.copy()
    variant[(base == 1) & (u < loss / p0)] = 0.0
    variant[(base == 0) & (u < gain / (1 - p0))] = 1.0
    return base, variant


def mc_binary(rng: np.random.Generator, reps: int, n: int, p0: float, gain: float, loss: float
              ) -> dict[str, tuple[float, float]]:
    """The same rates by Monte Carlo through paired_change on simulated items."""
    counts = {"regressed": 0, "improved": 0, "coverage95": 0, "equivalent": 0, "ratio_coverage": 0}
    truth = 100.0 * (gain - loss)
    true_ratio = 100.0 * (gain - loss) / p0
    for _ in range(reps):
        base, variant = _simulate_pair(rng, n, p0, gain, loss)
        change = paired_change(base, variant, "binary", "higher", MARGIN)
        counts[change.verdict] = counts.get(change.verdict, 0) + 1
        counts["coverage95"] += change.ci95[0] <= truth <= change.ci95[1]
        low, high = ratio_interval(base, variant)
        counts["ratio_coverage"] += low <= true_ratio <= high
    return {key: _rate(value, reps) for key, value in counts.items()}


def binary_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """Null type-I, one-directional coverage, TOST size, the `*` flag and the ratio CI at small n·p0."""
    for n in (30, 50, 75, 100, 150, 200, 400, 1000, 2000):
        for f in (0.02, 0.1, 0.3):
            exact = exact_binary(n, f / 2, f / 2)
            cell = f"n={n} symmetric flips f={f}"
            yield Row("type1 exact", cell, max(exact["regressed"], exact["improved"]), 0.0, "<= 2.6",
                      max(exact["regressed"], exact["improved"]) <= 2.6)
            yield Row("flag exact", cell, exact["regressed"] + exact["improved"], 0.0, "<= 5",
                      exact["regressed"] + exact["improved"] <= 5.0)
        for f in (0.005, 0.01, 0.02, 0.05, 0.1, 0.3):
            for share in (0.5, 0.75, 1.0):
                exact = exact_binary(n, (1 - share) * f, share * f)
                yield Row("coverage95 exact", f"n={n} f={f} losses {share:.0%} of flips", exact["coverage95"], 0.0,
                          ">= 93", exact["coverage95"] >= 93.0)
        if n >= 50:
            for f in (0.05, 0.06, 0.1, 0.2, 0.3):
                exact = exact_binary(n, (f - 0.05) / 2, (f + 0.05) / 2)
                yield Row("tost exact", f"n={n} true -5 points, f={f}", exact["equivalent"], 0.0, "<= 5.5",
                          exact["equivalent"] <= 5.5)
    for n, p0, gain, loss, name in ((100, 0.5, 0.0, 0.05, "tost MC"), (100, 0.8, 0.0, 0.02, "coverage95 MC"),
                                    (400, 0.5, 0.05, 0.05, "type1 MC"), (100, 0.5, 0.05, 0.05, "type1 MC")):
        mc = mc_binary(rng, reps, n, p0, gain, loss)
        key = {"tost MC": "equivalent", "coverage95 MC": "coverage95", "type1 MC": "regressed"}[name]
        value, se = mc[key]
        target, holds = {"equivalent": ("<= 5.5", value <= 5.5), "coverage95": (">= 93", value >= 93.0),
                         "regressed": ("<= 2.6", value <= 2.6)}[key]
        yield Row(name, f"n={n} p0={p0} gains {gain} losses {loss} (paired_change)", value, se, target, holds)
    for n in (30, 100):
        for p0 in (0.02, 0.05, 0.1):
            h = min(0.05, 0.4 * p0, 0.5 * (1 - p0))
            mc = mc_binary(rng, reps, n, p0, h, h)
            flag = mc["regressed"][0] + mc["improved"][0]
            flag_se = math.sqrt(mc["regressed"][1] ** 2 + mc["improved"][1] ** 2)
            yield Row("flag MC", f"n={n} p0={p0} noise flips {h:.3f} each way", flag, flag_se, "<= 5", flag <= 5.0)
            yield Row("ratio_coverage MC", f"n={n} p0={p0} null", *mc["ratio_coverage"], ">= 93",
                      mc["ratio_coverage"][0] >= 93.0)
            mc = mc_binary(rng, reps, n, p0, h, h + 0.2 * p0)
            yield Row("ratio_coverage MC", f"n={n} p0={p0} true -20%", *mc["ratio_coverage"], ">= 93",
                      mc["ratio_coverage"][0] >= 93.0)


# ---- member tasks that are forms of the same items, and the gate ------------------------------------------------

def _forms(rng: np.random.Generator, n: int, forms: int, shared: float, own: float, extra_loss: float
           ) -> list[tuple[np.ndarray, np.ndarray]]:
    """`forms` forms of the same n items at base rate 1/2: an item's change is shared by its forms with
    probability `shared` (one direction for all of them), else each form flips on its own with probability `own`;
    then every correct answer is lost with probability `extra_loss` (true change −50·extra_loss points)."""
    direction = rng.choice([-1, 1], size=n)
    together = rng.random(n) < shared
    out = []
    for _ in range(forms):
        base = (rng.random(n) < 0.5).astype(float)
        variant = base.copy()
        alone = ~together & (rng.random(n) < own)
        variant[alone] = 1 - base[alone]
        variant[together & (direction > 0)] = 1.0
        variant[together & (direction < 0)] = 0.0
        variant[(variant == 1) & (rng.random(n) < extra_loss)] = 0.0
        out.append((base, variant))
    return out


def capability_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """Type-I and coverage of a capability whose 4 members are forms of the same 500 items."""
    n = 500
    ids = [f"item-{i}" for i in range(n)]
    for shared in (0.0, 0.05, 0.15):
        for extra in (0.0, 0.06):
            truth = -50.0 * extra
            regressed = improved = covered = 0
            for _ in range(reps):
                members = [(f"form{t}", b, v, "binary", "higher") for t, (b, v) in enumerate(_forms(rng, n, 4, shared, 0.1, extra))]
                change = combine_changes(members, MARGIN, sources={f"form{t}": ids for t in range(4)})
                regressed += change.verdict == "regressed"
                improved += change.verdict == "improved"
                covered += change.ci95[0] <= truth <= change.ci95[1]
            cell = f"4 forms of 500 items, shared change {shared:.0%}, true {truth:+.0f}"
            if extra == 0.0:  # the null is symmetric: each side's rate is half the two-sided one (pooled, unbiased)
                value, se = _rate(regressed + improved, 2 * reps)
                yield Row("cap_type1 MC", cell + f" (per side; regressed {regressed}, improved {improved} of {reps})",
                          value, se, "<= 3", value <= 3.0)
            value, se = _rate(covered, reps)
            yield Row("cap_coverage95 MC", cell, value, se, ">= 93", value >= 93.0)


def gate_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """`--fail-on regressed` on an unchanged variant with 14 capabilities of 4 independent tasks each."""
    fails = 0
    for _ in range(reps):
        rows = []
        for cap in range(14):
            members = []
            for task in range(4):
                base, variant = _simulate_pair(rng, 500, 0.6, 0.05, 0.05)
                members.append((f"c{cap}t{task}", base, variant, "binary", "higher"))
            change = combine_changes(members, MARGIN)
            rows.append({"variant": "v", "level": "capability", "key": f"C{cap}", "verdict": change.verdict,
                         "oriented_change": change.delta, "change_ci_low": change.ci95[0],
                         "change_ci_high": change.ci95[1], "p_value": change.p_value})
        fails += bool(failing_cells(pd.DataFrame(rows), "regressed"))
    value, se = _rate(fails, reps)
    yield Row("gate_fwer MC", "14 capabilities x 4 tasks, n=500, p=0.6, 10% flips, null", value, se, "<= 5", value <= 5.0)


# ---- clusters ----------------------------------------------------------------------------------------------------

def cluster_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """paired_change with cluster labels: clusters of 5 items whose change is shared, and independent items."""
    for clusters, shared in ((6, 0.0), (6, 0.5), (20, 0.5), (6, 1.0)):
        n = 5 * clusters
        labels = np.repeat(np.arange(clusters), 5)
        for extra in (0.0, 0.1):
            truth, covered = -50.0 * extra, 0
            for _ in range(reps):
                base = (rng.random(n) < 0.5).astype(float)
                variant = base.copy()
                swing = np.where(rng.random(clusters) < shared, rng.choice([-1, 1], clusters), 0)[labels]
                own = (swing == 0) & (rng.random(n) < 0.1)
                variant[own] = 1 - base[own]
                moved = (swing != 0) & (rng.random(n) < 0.3)
                variant[moved & (swing > 0)], variant[moved & (swing < 0)] = 1.0, 0.0
                variant[(variant == 1) & (rng.random(n) < extra)] = 0.0
                change = paired_change(base, variant, "binary", "higher", MARGIN, list(labels))
                covered += change.ci95[0] <= truth <= change.ci95[1]
            value, se = _rate(covered, reps)
            data = "independent items" if shared == 0 else f"{shared:.0%} of clusters share a change"
            yield Row("cluster_coverage95 MC", f"{clusters} clusters of 5, {data}, true {truth:+.0f}", value, se,
                      ">= 93", value >= 93.0)


# ---- chance-adjusted forgetting ------------------------------------------------------------------------------------

def excess_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """Know-or-guess: no forgetting at all, so F − E00 should be 0 (the published clipped F_adj is shown beside)."""
    for scenario, known, k in (("guess", 0.0, 2), ("guess", 0.0, 4), ("same", 0.3, 4), ("same", 0.6, 2),
                               ("same", 0.6, 4), ("same", 0.9, 4), ("same", 0.6, 10)):
        for n in (100, 2000):
            excess, clipped = [], []
            for _ in range(reps):
                knows = rng.random(n) < known
                base = np.where(knows, 1.0, (rng.integers(0, k, n) == 0).astype(float))
                variant = np.where(knows, 1.0, (rng.integers(0, k, n) == 0).astype(float))
                t = count_transitions(base, variant)
                t = Transitions(t.n_11, t.n_10, t.n_01, t.n_00, k=k)
                excess.append(100 * t.forgetting_excess[0])
                clipped.append(100 * t.forgetting_adj)
            mean, se = float(np.mean(excess)), float(np.std(excess, ddof=1) / math.sqrt(reps))
            cell = f"{scenario} a={known} k={k} n={n}"
            yield Row("excess_bias MC", cell, mean, se, "|mean| <= 0.3 points", abs(mean) <= 0.3)
            yield Row("fadj_bias MC (published, no target)", cell, float(np.mean(clipped)),
                      float(np.std(clipped, ddof=1) / math.sqrt(reps)), "-", True)


# ---- the MDE -------------------------------------------------------------------------------------------------------

def mde_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """Independent outcomes at p and at p moved by the planned MDE toward 1/2: the verdict's hit rate."""
    for n, p in ((100, 0.5), (100, 0.9), (400, 0.5), (400, 0.9), (400, 1.0)):
        delta = mde_binary(n, p)
        p = min(max(p, 0.5 / n), 1.0 - 0.5 / n)  # the planner's model clips the rate so that both sides can flip
        q = p - delta if p >= 0.5 else p + delta
        hits = 0
        for _ in range(reps):
            base = (rng.random(n) < p).astype(float)
            variant = (rng.random(n) < q).astype(float)
            hits += paired_change(base, variant, "binary", "higher", MARGIN).verdict == "regressed"
        value, se = _rate(hits, reps)
        yield Row("mde_power MC", f"n={n} p={p} planned MDE {100 * delta:.1f} points", value, se, "75-86",
                  75.0 <= value <= 86.0)


SECTIONS: dict[str, Callable[[np.random.Generator, int], Iterator[Row]]] = {
    "binary": binary_rows, "capability": capability_rows, "gate": gate_rows, "cluster": cluster_rows,
    "excess": excess_rows, "mde": mde_rows,
}


def run(reps: int, seed: int = 2026, sections: tuple[str, ...] = tuple(SECTIONS)) -> pd.DataFrame:
    """Every row of the chosen sections, as a table."""
    rng = np.random.default_rng(seed)
    rows = [row for name in sections for row in SECTIONS[name](rng, reps)]
    return pd.DataFrame([row.__dict__ for row in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=2000, help="Monte-Carlo replicates per cell (default 2000)")
    parser.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--all-rows", action="store_true", help="print every exact row, not only each check's worst")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = run(args.reps, sections=tuple(args.sections))
    shown = table if args.all_rows else _worst_and_mc(table)
    with pd.option_context("display.max_rows", None, "display.width", 200, "display.max_colwidth", 70):
        print(shown.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    failed = table[~table["holds"]]
    print(f"\n{len(table)} cells, {len(failed)} outside their target; R = {args.reps}; "
          f"{time.perf_counter() - start:.0f} s")
    for row in failed.itertuples():
        print(f"MISS {row.check}: {row.cell}: {row.value:.2f} (MC SE {row.mcse:.2f}), target {row.target}")
    return 1 if len(failed) else 0


def _worst_and_mc(table: pd.DataFrame) -> pd.DataFrame:
    """Monte-Carlo rows as they are; of the exact rows, each check's worst five cells (and how many there were)."""
    exact = table[table["check"].str.endswith("exact")]
    parts = [table[~table["check"].str.endswith("exact")]]
    for check, rows in exact.groupby("check", sort=False):
        worst = rows.sort_values("value", ascending=check.startswith("coverage")).head(5)
        parts.append(worst.assign(check=f"{check} (worst 5 of {len(rows)})"))
    return pd.concat(parts[1:] + parts[:1], ignore_index=True)


if __name__ == "__main__":
    sys.exit(main())
