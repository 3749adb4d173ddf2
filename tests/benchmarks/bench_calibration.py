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
- `curve_fwer`: P(curve_summary.csv's first_step_significant is set) for an unchanged capability over K = 5/10/20
  checkpoints (the window scan over the K steps, curve_windows.scan_windows: max-T over windows of consecutive
  steps with a short-window penalty), fresh and drifting checkpoints; ≤ 6%. `curve_power`: the same against a
  −4-point change from step K/2, 1 and 2 tasks of 300 items; ≥ 85%. `curve_before_onset`: the first significant
  step dated before that onset (≤ 6%); `curve_spending_fwer`: the callback's anytime-valid alpha spending
  (curve_stats.spent_alpha), ≤ 6% (5% by construction, MC and the capability p-value's own approximation aside).
  Rows marked "no target" show the rules the scan replaced (Holm over the steps' own p-values; each step's own
  5% rule) and the callback's power.
- `cap_tost`: P(equivalent) of a capability of 2–4 independent 0/1 members of 50–150 items each, 5% of each
  forgotten (true change −5, the margin), with combine_changes' stratified score interval; ≤ 5.5% (exact, and
  MC through combine_changes at 2 × 80). `cap_type1` / `coverage95 capability`: the same capabilities' null
  per-side type-I (≤ 2.6%) and 95% coverage (≥ 93%); `cap_power`: P(regressed) at a clear one-way loss, beside
  the summed Agresti–Min Wald interval it replaced (no target).- `replicate_mcnemar` / `replicate_excess_coverage95`: transitions.csv's mcnemar_p (P(p < 0.05), ≤ 5.5%) and its
  F − E00 95% CI (≥ 93%) with 3 and 5 seeds when each item has its own change and the mean change is 0
  (transitions.seed_item_tests, on item means), beside the pooled seed × item pairs they replaced (no target).
- `algorithm_coverage95`: the board's per-algorithm 95% CI (algorithms.csv; analysis.algorithm_interval through
  bootstrap.bootstrap_drift's joint item resamples) for the algorithm's mean relative drift, with 3 and 5 variants
  that differ seed to seed and share one base whose items (300, a tenth of them carrying every variant's losses)
  move them together; ≥ 93%. `algorithm_drawn`: with 2 variants no interval is drawn (= 0%). Beside them (no
  target): the mean ± 1.96·sd/√k it replaced, and mean ± t(k − 1)·sd/√k without the shared base's error.
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
from scipy.stats import binom, norm

from captrack.analysis.algorithm_interval import algorithm_interval
from captrack.analysis.bootstrap import bootstrap_drift
from captrack.analysis.capability_score import capability_statistic
from captrack.analysis.curve_stats import first_significant_step, spent_alpha
from captrack.analysis.curve_windows import MemberSteps, scan_windows
from captrack.analysis.intervals import ratio_interval, score_interval, t_quantile
from captrack.analysis.power import mde_binary
from captrack.analysis.stats import mcnemar_exact
from captrack.analysis.transitions import Transitions, count_transitions, seed_item_tests
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


# ---- drift over training: first_step_significant over K steps ------------------------------------------------------

P0 = 0.6
NOISE = 0.05  # each checkpoint: 5% of items forgotten and 5% gained against the base, drawn anew


def _checkpoint(rng: np.random.Generator, base: np.ndarray, extra_loss: float) -> np.ndarray:
    """The base with fresh symmetric noise flips (NOISE each way, as shares of all items) and `extra_loss` more of
    the items forgotten: a true change of −100·extra_loss points."""
    u = rng.random(base.size)
    return np.where(base == 1, (u >= (NOISE + extra_loss) / P0).astype(float), (u < NOISE / (1 - P0)).astype(float))


def trajectory_steps(rng: np.random.Generator, tasks: int, n: int, k: int, onset: int | None = None,
                     drifting: bool = False) -> tuple[list[str], list[float], list[MemberSteps]]:
    """One trajectory of K checkpoints of a capability of `tasks` tasks of n items (base rate 0.6): each step's
    verdict and p-value through paired_change / combine_changes, as curves.csv's, and each task's items x K
    changes (points) for the window scan (curve_windows.scan_windows), as curve_summary.csv's.

    fresh: every checkpoint is the base with its noise drawn anew (steps correlated through the base only);
    drifting: each checkpoint re-draws 2% of the previous one's items (strongly correlated steps, the same
    marginals); `onset`: from that step (1-based) on, 4% more of the items are forgotten (a true −4 points).
    """
    bases = [(rng.random(n) < P0).astype(float) for _ in range(tasks)]
    current = [_checkpoint(rng, b, 0.0) for b in bases]
    changes = [np.empty((n, k)) for _ in range(tasks)]
    verdicts, p_values = [], []
    for step in range(1, k + 1):
        extra = 0.04 if onset is not None and step >= onset else 0.0
        if drifting and step > 1:
            current = [np.where(rng.random(n) < 0.02, _checkpoint(rng, b, extra), c) for b, c in zip(bases, current, strict=True)]
        elif not drifting or extra:  # fresh: every checkpoint drawn anew (drifting: the first is the one drawn above)
            current = [_checkpoint(rng, b, extra) for b in bases]
        members = [(f"t{t}", b, v, "binary", "higher") for t, (b, v) in enumerate(zip(bases, current, strict=True))]
        change = combine_changes(members, MARGIN)
        verdicts.append(change.verdict)
        p_values.append(change.p_value)
        for t, (b, v) in enumerate(zip(bases, current, strict=True)):
            changes[t][:, step - 1] = 100.0 * (v - b)
    units = [[f"t{t}\x1f{i}" for i in range(n)] for t in range(tasks)]
    return verdicts, p_values, [MemberSteps(d, u) for d, u in zip(changes, units, strict=True)]


def curve_rates(rng: np.random.Generator, reps: int, tasks: int, n: int, k: int, onset: int | None = None,
                drifting: bool = False) -> dict[str, tuple[float, float]]:
    """Over `reps` trajectories: P(first_step_significant set) by the window scan (curve_windows.scan_windows,
    as curve_summary.csv's) and P(its step lies before the onset); beside them Holm over the steps' own p-values
    (curve_stats.first_significant_step, the rule the scan replaced), each step's own 5% rule, and the
    callback's alpha spending."""
    steps = list(range(1, k + 1))
    counts = {"scan": 0, "before_onset": 0, "holm": 0, "raw": 0, "spending": 0}
    for _ in range(reps):
        verdicts, p_values, members = trajectory_steps(rng, tasks, n, k, onset, drifting)
        first = scan_windows(steps, members, verdicts, p_values).first_step
        counts["scan"] += first is not None
        counts["before_onset"] += first is not None and onset is not None and first < onset
        counts["holm"] += first_significant_step(steps, verdicts, p_values) is not None
        counts["raw"] += any(v in ("regressed", "improved") for v in verdicts)
        counts["spending"] += any(v in ("regressed", "improved") and p <= spent_alpha(i)
                                  for i, (v, p) in enumerate(zip(verdicts, p_values, strict=True), start=1))
    return {key: _rate(value, reps) for key, value in counts.items()}


def curve_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """first_step_significant (the window scan over the K steps) under the null and against a −4-point change
    from step K/2, with the rules it replaced beside it (no target) and the callback's alpha spending."""
    for tasks, n, layout in ((1, 300, "1 task x 300 items"), (2, 300, "2 tasks x 300 items")):
        for k in (5, 10, 20):
            null = curve_rates(rng, reps, tasks, n, k)
            cell = f"fresh checkpoints, {layout}, K={k}, null"
            yield Row("curve_fwer MC", cell + " (window scan)", *null["scan"], "<= 6", null["scan"][0] <= 6.0)
            yield Row("curve_fwer MC (Holm over the steps, replaced; no target)", cell, *null["holm"], "-", True)
            yield Row("curve_raw MC (per-step rule, replaced; no target)", cell, *null["raw"], "-", True)
            yield Row("curve_spending_fwer MC (callback)", cell, *null["spending"], "<= 6",
                      null["spending"][0] <= 6.0)
            if k == 5:
                continue
            alt = curve_rates(rng, reps, tasks, n, k, onset=k // 2)
            cell = f"fresh checkpoints, {layout}, K={k}, -4 points from step {k // 2}"
            yield Row("curve_power MC", cell + " (window scan)", *alt["scan"], ">= 85", alt["scan"][0] >= 85.0)
            yield Row("curve_before_onset MC", cell + ": first significant step before the onset", *alt["before_onset"],
                      "<= 6", alt["before_onset"][0] <= 6.0)
            yield Row("curve_power MC (Holm over the steps, replaced; no target)", cell, *alt["holm"], "-", True)
            yield Row("curve_spending_power MC (callback; no target)", cell, *alt["spending"], "-", True)
    for k in (10, 20):
        null = curve_rates(rng, reps, 2, 300, k, drifting=True)
        cell = f"drifting checkpoints (2% re-drawn per step), 2 tasks x 300 items, K={k}, null"
        yield Row("curve_fwer MC", cell + " (window scan)", *null["scan"], "<= 6", null["scan"][0] <= 6.0)
        yield Row("curve_spending_fwer MC (callback)", cell, *null["spending"], "<= 6", null["spending"][0] <= 6.0)


# ---- capabilities of a few small members: the stratified score interval (issue 53) ---------------------------------

def _member_grid(ns: tuple[int, ...], gain: float, loss: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every combination of the members' (gains, losses) tables with non-negligible probability: gains, losses and
    n of shape (tables, members), and each combination's probability (independent members)."""
    gains, losses, probs = zip(*(_tables(n, gain, loss) for n in ns), strict=True)
    keep = [p > 1e-11 for p in probs]
    grids = np.meshgrid(*[np.flatnonzero(k) for k in keep], indexing="ij")
    at = [grid.ravel() for grid in grids]
    g = np.stack([gains[j][at[j]] for j in range(len(ns))], axis=1).astype(float)
    lo = np.stack([losses[j][at[j]] for j in range(len(ns))], axis=1).astype(float)
    prob = np.prod(np.stack([probs[j][at[j]] for j in range(len(ns))], axis=1), axis=1)
    return g, lo, np.broadcast_to(np.asarray(ns, dtype=float), g.shape), prob


def _wald_statistic(g: np.ndarray, lo: np.ndarray, n: np.ndarray, delta: float) -> np.ndarray:
    """The summed Agresti–Min Wald statistic the capability used before (no target: the 'before' rows)."""
    adjusted = 100.0 * (g - lo) / (n + 2.0)
    var = np.maximum((1e4 * (g + lo) + 1e4) / (n + 2.0) - adjusted**2, 0.0) / (n + 2.0)
    return np.asarray((100.0 * (g - lo) / n).mean(axis=1) - delta) / (np.sqrt(var.sum(axis=1)) / g.shape[1])


def exact_members(ns: tuple[int, ...], gain: float, loss: float, wald: bool = False) -> dict[str, float]:
    """Exact P(regressed), P(improved), coverage of the 95% CI and P(equivalent) of a capability of independent
    0/1 members (combine_changes' interval decided from its statistic at 0, ±margin and the truth)."""
    g, lo, n, prob = _member_grid(ns, gain, loss)
    z = {level: float(norm.ppf(0.5 + level / 2.0)) for level in (0.95, 0.90)}
    stat = (lambda d: _wald_statistic(g, lo, n, d)) if wald else (lambda d: capability_statistic(g, lo, n, d))
    at_zero, truth = stat(0.0), 100.0 * (gain - loss)
    equivalent = (stat(-MARGIN) >= z[0.90]) & (stat(MARGIN) <= -z[0.90]) & (np.abs(at_zero) <= z[0.95])
    return {"regressed": 100 * prob[at_zero < -z[0.95]].sum(), "improved": 100 * prob[at_zero > z[0.95]].sum(),
            "coverage95": 100 * prob[np.abs(stat(truth)) <= z[0.95]].sum(), "equivalent": 100 * prob[equivalent].sum()}


def member_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """Capability TOST size at 2–4 members × 50–150 items with one-way losses, null type-I and coverage (exact),
    power at a clear regression beside the summed Wald interval it replaced, and MC through combine_changes."""
    for m, step in ((2, 5), (3, 5), (4, 10)):
        for n in range(50, 151, step):
            value = exact_members((n,) * m, 0.0, 0.05)["equivalent"]
            yield Row("cap_tost exact", f"{m} members x {n} items, 5% forgotten, true -5", value, 0.0, "<= 5.5",
                      value <= 5.5)
    for ns, flips in (((50, 50), 0.15), ((100, 100), 0.15), ((80, 80), 0.05), ((50, 400), 0.1), ((60, 60, 60), 0.05)):
        rates = exact_members(ns, flips, flips)
        cell = f"members {ns}, {flips:.0%} flips each way, null"
        for side in ("regressed", "improved"):
            yield Row("cap_type1 exact", f"{cell} ({side})", rates[side], 0.0, "<= 3", rates[side] <= 3.0)
        yield Row("coverage95 capability exact", cell, rates["coverage95"], 0.0, ">= 93", rates["coverage95"] >= 93.0)
    for ns, loss in (((80, 80), 0.05), ((50, 50), 0.1), ((100, 100), 0.02), ((150, 150, 150), 0.03)):
        for label, wald in (("", False), (" (summed Wald, before; no target)", True)):
            rates = exact_members(ns, 0.0, loss, wald)
            cell = f"members {ns}, {loss:.0%} forgotten, true {-100 * loss:+.0f}"
            yield Row("cap_power exact" + label, cell, rates["regressed"], 0.0, "-", True)
            if not wald:
                yield Row("coverage95 capability exact", cell, rates["coverage95"], 0.0, ">= 93", rates["coverage95"] >= 93.0)
    equivalent = 0
    for _ in range(reps):  # the function itself, on simulated items: the worst cell of the summed Wald interval
        members = [(f"t{j}", *_simulate_pair(rng, 80, 0.6, 0.0, 0.05), "binary", "higher") for j in range(2)]
        equivalent += combine_changes(members, MARGIN).verdict == "equivalent"
    value, se = _rate(equivalent, reps)
    yield Row("cap_tost MC", "2 members x 80 items, 5% forgotten, true -5 (combine_changes)", value, se, "<= 5.5",
              value <= 5.5)


# ---- replicates: transitions.csv's tests with several seeds (issue 53) -----------------------------------------------

def _seed_outcomes(rng: np.random.Generator, n: int, seeds: int, layout: str) -> tuple[np.ndarray, np.ndarray, float]:
    """(items, seeds) outcomes of a base and a variant whose mean change is 0, and the true F − E00 (k = 4).

    Each item has its own base and variant rates (p, q); seeds are Bernoulli draws given them, so an item's seeds
    share its change. `swap`: p and q are two U(0.1, 0.95) draws in random order (an item-specific change, each
    item's as likely either way); `skewed`: q = p + 0.3 for a third of the items and p − 0.15 for the rest,
    p ~ U(0.2, 0.7) (mean 0, not symmetric); `same`: q = p ~ U(0.1, 0.95) (no change, what each item's seeds know
    in common only)."""
    w = 1.0 / 3.0
    if layout == "swap":
        r, s = rng.uniform(0.1, 0.95, n), rng.uniform(0.1, 0.95, n)
        flip = rng.random(n) < 0.5
        p, q = np.where(flip, r, s), np.where(flip, s, r)
        mu = 0.525
        truth = mu * (1 - mu) - w * (1 - mu) ** 2
    elif layout == "skewed":
        p = rng.uniform(0.2, 0.7, n)
        q = p + np.where(rng.random(n) < 1 / 3, 0.3, -0.15)
        mean_pq = 0.45**2 + 0.25 / 12  # E[p·q] = E[p²] + E[p]·E[c], E[c] = 0
        truth = (0.45 - mean_pq) - w * (1 - 2 * 0.45 + mean_pq)
    else:
        p = q = rng.uniform(0.1, 0.95, n)
        second = (0.1**2 + 0.1 * 0.95 + 0.95**2) / 3
        truth = (0.525 - second) - w * (1 - 2 * 0.525 + second)
    before = rng.random((n, seeds)) < p[:, None]
    after = rng.random((n, seeds)) < q[:, None]
    return before, after, truth


def replicate_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """mcnemar_p and the F − E00 CI of transitions.csv with several seeds (transitions.seed_item_tests: item means),
    beside the pooled seed × item pairs they replaced (no target). 4 × R per cell (MC SE ≈ 0.25 on a 5% rate): the
    test is exact where an item's change is as likely either way (swap, same), so its size is 5% less discreteness."""
    reps *= 4
    for layout in ("swap", "skewed", "same"):
        for n, seeds in ((500, 3), (500, 5)):
            counts = {"item": [0, 0], "pooled": [0, 0]}
            for _ in range(reps):
                before, after, truth = _seed_outcomes(rng, n, seeds, layout)
                tests = seed_item_tests(before, after, 1.0 / 3.0)
                counts["item"][0] += tests["mcnemar_p"] < 0.05
                counts["item"][1] += tests["forgetting_excess_ci_low"] <= truth <= tests["forgetting_excess_ci_high"]
                t = Transitions(int((before & after).sum()), int((before & ~after).sum()), int((~before & after).sum()),
                                int((~before & ~after).sum()), k=4)
                counts["pooled"][0] += mcnemar_exact(t.n_10, t.n_01) < 0.05
                _, low, high = t.forgetting_excess
                counts["pooled"][1] += low <= truth <= high
            cell = f"{n} items x {seeds} seeds, {layout}, mean change 0"
            for which, label in (("item", ""), ("pooled", " (pooled pairs, before; no target)")):
                false, covered = (_rate(value, reps) for value in counts[which])
                yield Row("replicate_mcnemar MC" + label, cell, *false, "<= 5.5" if not label else "-",
                          false[0] <= 5.5 or bool(label))
                yield Row("replicate_excess_coverage95 MC" + label, cell, *covered, ">= 93" if not label else "-",
                          covered[0] >= 93.0 or bool(label))


# ---- the board's per-algorithm interval -------------------------------------------------------------------------

ALG_ITEMS, ALG_RESAMPLES = 300, 1000  # a capability of 300 items; the board's default resamples
ALG_GAIN, ALG_LOSS, ALG_SPREAD = 0.02, 0.06, 0.015  # a variant's gains; its loss rate: mean and seed-to-seed sd
ALG_SUSCEPTIBLE, ALG_WEIGHT = 0.1, 10.0  # a tenth of the items carry every variant's losses (at 10x the rate)


def _algorithm_trial(rng: np.random.Generator, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """k variants of one base on the same items (base rate U(0.2, 0.9), mean 0.55): each variant's relative drift and
    its joint bootstrap resamples (bootstrap_drift: one item index for the base and every variant)."""
    p = rng.uniform(0.2, 0.9, ALG_ITEMS)
    weight = np.where(rng.random(ALG_ITEMS) < ALG_SUSCEPTIBLE, ALG_WEIGHT, 0.0)
    base = (rng.random(ALG_ITEMS) < p).astype(float)
    items = {}
    for j in range(k):
        loss = ALG_LOSS + ALG_SPREAD * rng.standard_normal()
        lost = rng.random(ALG_ITEMS) < np.clip(loss * weight, 0.0, 1.0)
        gained = rng.random(ALG_ITEMS) < ALG_GAIN
        items[(f"v{j}", "task", "acc")] = (base, np.where(base > 0, ~lost, gained).astype(float))
    boot = bootstrap_drift(items, ALG_RESAMPLES, seed)
    values = np.array([100.0 * (v.mean() - b.mean()) / b.mean() for b, v in items.values()])
    return values, np.vstack([boot[key] for key in items])


def algorithm_rows(rng: np.random.Generator, reps: int) -> Iterator[Row]:
    """The per-algorithm CI's coverage of the algorithm's mean drift μ = 100·(g(1 − m) − l·m)/m at 2, 3 and 5
    variants with a shared base, beside the rules it replaced (no target)."""
    truth = 100.0 * (ALG_GAIN * 0.45 - ALG_LOSS * 0.55) / 0.55
    for k in (2, 3, 5):
        drawn = covered = old = plain_t = 0
        for rep in range(reps):
            values, samples = _algorithm_trial(rng, k, rep)
            interval = algorithm_interval(values, samples)
            if not math.isnan(interval.low):
                drawn += 1
                covered += interval.low <= truth <= interval.high
            error, se = abs(values.mean() - truth), values.std(ddof=1) / math.sqrt(k)
            old += error <= 1.96 * se
            plain_t += error <= t_quantile(0.95, k - 1) * se
        cell = f"{k} variants, {ALG_ITEMS} items, shared base"
        if k < 3:
            yield Row("algorithm_drawn MC", cell, *_rate(drawn, reps), "= 0", drawn == 0)
        else:
            rate = _rate(covered, max(drawn, 1))
            yield Row("algorithm_coverage95 MC", cell, *rate, ">= 93", drawn == reps and rate[0] >= 93.0)
        yield Row("algorithm_coverage95 MC (before: mean ± 1.96·sd/√k)", cell, *_rate(old, reps), "-", True)
        yield Row("algorithm_coverage95 MC (mean ± t·sd/√k, no shared term)", cell, *_rate(plain_t, reps), "-", True)


SECTIONS: dict[str, Callable[[np.random.Generator, int], Iterator[Row]]] = {
    "binary": binary_rows, "capability": capability_rows, "gate": gate_rows, "cluster": cluster_rows,
    "excess": excess_rows, "mde": mde_rows, "curves": curve_rows, "members": member_rows,
    "replicates": replicate_rows, "algorithms": algorithm_rows,
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
