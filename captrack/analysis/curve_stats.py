"""Per-capability statistics of a trajectory: first significant step, trend over steps, item churn.

- *First significant step*: the first step significant after control over the K steps examined: the window scan
  of captrack.analysis.curve_windows (max-T over every window of consecutive steps, each window the paired change of
  its items' mean over its checkpoints; a one-step window is that step's own verdict, with the shared-item and
  cluster corrections of capabilities.csv). An unchanged capability gets one in at most 5% of trajectories (each
  step's own 5% rule alone: about 1 − 0.95^K, 40% at K = 10), and a change is dated before its onset in at most
  5%. It replaced Holm's step-down test over the steps' own p-values (`first_significant_step`, kept for the
  harness's comparison), which has the same guarantee but cannot pool a sustained change's evidence over steps:
  against a −4-point change from step K/2 of one task of 300 items Holm finds it in 59% of trajectories at
  K = 10, the scan in about 87% (tests/benchmarks/bench_calibration.py, section `curves`). A one-step trajectory's
  first step is the end point's verdict.
- *Trend*: the least-squares slope of the capability's drift (percent) over steps, with a CI from the
  same bootstrap resamples at every step (items drawn once per resample and reused across steps), so
  the CI is paired over items.
- *Item churn*: items forgotten at some step (right in the base, wrong at that step) and right again at a
  later step, and items gained at some step and wrong again later (binary metrics; oriented, so a
  lower-is-better metric's 0 is right).
- *Step flips*: the items whose outcome changed at a step, against the step evaluated before it (the base
  before the first), so a point of a curve leads to the items that moved it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from captrack.analysis.curve_windows import MemberSteps, first_step
from captrack.analysis.stats import percentile_ci
from captrack.analysis.verdicts import holm_rejected
from captrack.taxonomy import Taxonomy

__all__ = ["CHURN_ITEM_COLUMNS", "FIRST_STEP_ALPHA", "STEP_FLIP_COLUMNS", "SUMMARY_COLUMNS", "capability_summary",
           "first_significant_step", "item_churn", "spent_alpha", "step_flips", "trend_slopes"]

SUMMARY_COLUMNS = [
    "variant", "algorithm", "capability", "group", "n_steps", "first_step_significant", "final_step",
    "final_drift_pct", "trend_pct_per_step", "trend_ci_low", "trend_ci_high", "forgotten_regained", "gained_lost",
]
CHURN_ITEM_COLUMNS = ["variant", "algorithm", "task", "metric", "doc_id", "doc_hash", "pattern", "first_step", "later_step"]
STEP_FLIP_COLUMNS = ["variant", "algorithm", "step", "since", "capability", "task", "metric", "doc_id", "doc_hash",
                     "change"]
Boot = Mapping[tuple[str, str, str], NDArray[np.float64]]
Windowed = tuple[list[MemberSteps], float | None]  # a capability's members over the steps, cluster df
FIRST_STEP_ALPHA = 0.05
"""Family-wise error of first_step_significant over a trajectory's steps."""
SIGNIFICANT = ("regressed", "improved")


def spent_alpha(k: int, alpha: float = FIRST_STEP_ALPHA) -> float:
    """The error spent on the k-th look (k = 1, 2, ...) of an open-ended sequence: α·6/(π²k²), which sums to α
    over every k, so flagging look k where its p ≤ spent_alpha(k) keeps the chance of any false flag ≤ α however
    many looks are taken and whenever one stops (a union bound: valid under any dependence between looks)."""
    if k < 1:
        raise ValueError(f"spent_alpha: looks count from 1, got {k}")
    return alpha * 6.0 / (math.pi**2 * k * k)


def first_significant_step(steps: list[int], verdicts: list[str], p_values: list[float],
                           alpha: float = FIRST_STEP_ALPHA) -> int | None:
    """Holm's rule, which first_step_significant used before the window scan: the earliest step whose verdict is
    regressed or improved and whose p-value Holm's test rejects at family-wise error `alpha` over the steps with a
    p-value (None: no step); see the module docstring."""
    rejected = holm_rejected(p_values, alpha)
    return next((s for s, v, r in zip(steps, verdicts, rejected, strict=True) if r and v in SIGNIFICANT), None)


def trend_slopes(steps: NDArray[np.float64], values: NDArray[np.float64]) -> NDArray[np.float64]:
    """Least-squares slope of `values` over `steps` (values: steps x columns); NaN where a column has a NaN
    or fewer than two steps are given."""
    x = np.asarray(steps, dtype=float)
    y = np.asarray(values, dtype=float).reshape(len(x), -1)
    if len(x) < 2 or np.ptp(x) == 0:
        return np.full(y.shape[1], np.nan)
    dx = x - x.mean()
    return (dx[:, None] * (y - y.mean(axis=0))).sum(axis=0) / (dx * dx).sum()


def capability_summary(variant: str, algorithm: str, per_step: Mapping[int, pd.DataFrame], boots: Mapping[int, Boot],
                       churn: pd.DataFrame, taxonomy: Taxonomy, level: float = 0.95,
                       windows: Mapping[str, Windowed] | None = None) -> pd.DataFrame:
    """One row per capability the trajectory measures (columns SUMMARY_COLUMNS).

    `windows`: per capability, its oriented members' item changes over the trajectory's steps and the cluster
    degrees of freedom (curve_windows.trajectory_members), for the window scan of first_step_significant; a
    capability without them is scanned on its steps' own verdicts alone."""
    windows = windows or {}
    rows = []
    steps = sorted(per_step)
    counts = _churn_counts(churn, taxonomy)
    for group in taxonomy.groups:
        for cap in group.capabilities:
            drifts = np.array([_capability_value(per_step[s], cap.key, "drift_pct") for s in steps])
            if np.isnan(drifts).all():
                continue
            members = [(variant, m.task, m.metric) for m in cap.members]
            scored = [i for i, d in enumerate(drifts) if not math.isnan(d)]
            first = _first_step([steps[i] for i in scored], scored, per_step, cap.key, windows.get(cap.key))
            x = np.array([steps[i] for i in scored], dtype=float)
            slope = float(trend_slopes(x, drifts[scored])[0])
            samples = _capability_samples([boots[steps[i]] for i in scored], members)
            low, high = percentile_ci(trend_slopes(x, samples), level) if samples is not None else (math.nan, math.nan)
            rows.append({
                "variant": variant, "algorithm": algorithm, "capability": cap.key, "group": group.key,
                "n_steps": len(scored), "first_step_significant": first,
                "final_step": steps[scored[-1]], "final_drift_pct": float(drifts[scored[-1]]),
                "trend_pct_per_step": slope, "trend_ci_low": low, "trend_ci_high": high,
                "forgotten_regained": counts.get((cap.key, "forgotten_regained"), 0),
                "gained_lost": counts.get((cap.key, "gained_lost"), 0),
            })
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    frame["first_step_significant"] = frame["first_step_significant"].astype("Int64")
    return frame


def _first_step(steps: list[int], at: list[int], per_step: Mapping[int, pd.DataFrame], key: str,
                windowed: Windowed | None) -> int | None:
    """The first significant step of the capability's scored steps (`at`: their columns among all steps) by the
    window scan of captrack.analysis.curve_windows."""
    members, df = windowed if windowed is not None else ([], None)
    return first_step(steps, [MemberSteps(m.changes[:, at], m.units) for m in members],
                      [_capability_verdict(per_step[s], key) for s in steps],
                      [_capability_value(per_step[s], key, "p_value") for s in steps], df)


def _capability_value(frame: pd.DataFrame, key: str, column: str) -> float:
    row = frame[(frame["level"] == "capability") & (frame["key"] == key)]
    return float(row[column].iloc[0]) if len(row) and column in row else math.nan


def _capability_verdict(frame: pd.DataFrame, key: str) -> str:
    row = frame[(frame["level"] == "capability") & (frame["key"] == key)]
    return str(row["verdict"].iloc[0]) if len(row) else ""


def _capability_samples(boots: list[Boot], members: list[tuple[str, str, str]]) -> NDArray[np.float64] | None:
    """Steps x resamples: per step and resample, the mean over the capability's members' drift samples."""
    per_step = []
    for boot in boots:
        stacked = [boot[k] for k in members if k in boot]
        if not stacked:
            return None
        with warnings.catch_warnings():  # a resample where every member is NaN stays NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            per_step.append(np.nanmean(np.vstack(stacked), axis=0))
    return np.vstack(per_step) if per_step else None


def _churn_counts(churn: pd.DataFrame, taxonomy: Taxonomy) -> dict[tuple[str, str], int]:
    """(capability, pattern) -> items, over the capability's member (task, metric)s."""
    out: dict[tuple[str, str], int] = {}
    for member in taxonomy.members:
        picked = churn[(churn["task"] == member.task) & (churn["metric"] == member.metric)]
        for pattern, n in picked["pattern"].value_counts().items():
            out[(member.capability, str(pattern))] = out.get((member.capability, str(pattern)), 0) + int(n)
    return out


def item_churn(variant: str, algorithm: str, steps: Mapping[int, pd.DataFrame],
               lower: Mapping[tuple[str, str], bool]) -> pd.DataFrame:
    """Items forgotten then regained, and gained then lost, over the steps (columns CHURN_ITEM_COLUMNS).

    Args:
        steps: step -> paired items of binary metrics (captrack.results.pairing.PairedItems.items rows);
            replicates are averaged, an item counts as right above 0.5 (oriented by `lower`).
        lower: (task, metric) -> whether 1 is the bad outcome.
    """
    if len(steps) < 2:
        return pd.DataFrame(columns=CHURN_ITEM_COLUMNS)
    keys = ["task", "metric", "doc_hash", "occ"]
    order = sorted(steps)
    frames = [steps[s].groupby(keys, sort=True).agg(doc_id=("doc_id", "first"), base=("base", "mean"),
                                                    value=("variant", "mean")).assign(step=s) for s in order]
    long = pd.concat(frames).reset_index()
    wide = long.pivot_table(index=keys, columns="step", values="value", aggfunc="first").dropna()
    if wide.empty:
        return pd.DataFrame(columns=CHURN_ITEM_COLUMNS)
    first = long.drop_duplicates(keys).set_index(keys).loc[wide.index]
    flip = np.array([lower.get((t, m), False) for t, m, _, _ in wide.index])
    good = (wide[order].to_numpy() > 0.5) != flip[:, None]
    base_good = (first["base"].to_numpy() > 0.5) != flip
    rows = []
    for pattern, start, then in (("forgotten_regained", base_good, good), ("gained_lost", ~base_good, ~good)):
        left = ~then  # forgotten (or gained) at a step: the opposite of the base's outcome
        seen = np.logical_or.accumulate(left, axis=1)
        back = then & np.concatenate([np.zeros((len(then), 1), bool), seen[:, :-1]], axis=1)
        hit = start & back.any(axis=1)
        for i in np.flatnonzero(hit):
            task, metric, doc_hash, _ = wide.index[i]
            rows.append({"variant": variant, "algorithm": algorithm, "task": task, "metric": metric,
                         "doc_id": int(first["doc_id"].iloc[i]), "doc_hash": doc_hash, "pattern": pattern,
                         "first_step": order[int(np.argmax(left[i]))], "later_step": order[int(np.argmax(back[i]))]})
    return pd.DataFrame(rows, columns=CHURN_ITEM_COLUMNS).sort_values(
        ["task", "metric", "pattern", "doc_id"], kind="stable", ignore_index=True)


def step_flips(variant: str, algorithm: str, steps: Mapping[int, pd.DataFrame], lower: Mapping[tuple[str, str], bool],
               taxonomy: Taxonomy) -> pd.DataFrame:
    """Items whose outcome changed at each step (columns STEP_FLIP_COLUMNS), one row per capability the item's
    (task, metric) belongs to.

    `since` is the step compared with: "base" for the first step, else the previous step evaluated. `change`
    is "forgotten" (right before, wrong at the step) or "gained" (oriented as item_churn; replicates averaged,
    right above 0.5). Items not scored at both points are left out.
    """
    keys = ["task", "metric", "doc_hash", "occ"]
    order = sorted(steps)
    if not order:
        return pd.DataFrame(columns=STEP_FLIP_COLUMNS)
    frames = [steps[s].groupby(keys, sort=True).agg(doc_id=("doc_id", "first"), base=("base", "mean"),
                                                    value=("variant", "mean")) for s in order]
    capabilities: dict[tuple[str, str], list[str]] = {}
    for m in taxonomy.members:
        capabilities.setdefault((m.task, m.metric), []).append(m.capability)
    rows = []
    previous = frames[0]["base"].rename("value_before")
    for step, since, frame in zip(order, ["base", *map(str, order[:-1])], frames, strict=True):
        both = frame.join(previous, how="inner")
        flip = np.array([lower.get((t, m), False) for t, m, _, _ in both.index], dtype=bool)
        before = (both["value_before"].to_numpy() > 0.5) != flip
        now = (both["value"].to_numpy() > 0.5) != flip
        for i in np.flatnonzero(before != now):
            task, metric, doc_hash, _ = both.index[i]
            for capability in capabilities.get((task, metric), [""]):
                rows.append({"variant": variant, "algorithm": algorithm, "step": step, "since": since,
                             "capability": capability, "task": task, "metric": metric,
                             "doc_id": int(both["doc_id"].iloc[i]), "doc_hash": doc_hash,
                             "change": "forgotten" if before[i] else "gained"})
        previous = frame["value"].rename("value_before")
    return pd.DataFrame(rows, columns=STEP_FLIP_COLUMNS).sort_values(
        ["step", "capability", "task", "metric", "change", "doc_id"], kind="stable", ignore_index=True)
