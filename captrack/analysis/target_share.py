"""A capability that holds the post-training's target task, with and without it: a variant trained on one task shows
a gain in that task's capability that may be the target alone (the demo's C2 gain is mostly its SFT target, its word
problems), so the board states both.

Without the target, the capability's change is the mean of its other members' changes (drift.csv's oriented_change,
each (task, metric) once), as the capability's own Δ is the mean of all of them. Its 95% CI is the remaining
member's own where one remains; with several it is mean ± z·(mean of their standard errors), each read off its own
95% CI: the members taken as perfectly correlated, the widest the mean's interval can be, since members on the same
items (a task's accuracy and its judged reasoning) are correlated and the items are not at hand here. A single
remaining member keeps its own verdict; several get none: the mean is a reading aid beside the capability's verdict,
not a second test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

__all__ = ["TARGET_COLUMNS", "without_target"]

TARGET_COLUMNS = ["variant", "key", "target", "oriented_change", "change_ci_low", "change_ci_high",
                  "verdict", "others", "without_change", "without_ci_low", "without_ci_high", "without_verdict"]
"""Per variant and capability holding the target: the capability's Δ, CI and verdict, then its other members
with a change (task/metric, '; '-separated) and their mean Δ with its 95% CI (NaN without another member), and
the verdict where one member remains (its own; '' with several)."""


def _without(members: pd.DataFrame) -> tuple[float, float, float]:
    """The mean change of `members` (drift rows) and its CI (module docstring)."""
    changes = members["oriented_change"].to_numpy(dtype=float)
    low, high = members["change_ci_low"].to_numpy(dtype=float), members["change_ci_high"].to_numpy(dtype=float)
    kept = np.isfinite(changes)
    if not kept.any():
        return math.nan, math.nan, math.nan
    mean = float(changes[kept].mean())
    if int(kept.sum()) == 1:
        return mean, float(low[kept][0]), float(high[kept][0])
    if not (np.isfinite(low[kept]).all() and np.isfinite(high[kept]).all()):
        return mean, math.nan, math.nan
    half = float(np.mean((high[kept] - low[kept]) / 2.0))  # z·se of each; their mean is z·(mean se)
    return mean, mean - half, mean + half


def without_target(caps: pd.DataFrame, drift: pd.DataFrame, target: str) -> pd.DataFrame:
    """Per variant and capability with a member of task `target`: the capability's change and its change without
    the target's members (TARGET_COLUMNS), from the 95% CIs of both tables; empty without a target, or where no
    capability holds it.

    Args:
        caps: capability rows with the verdict columns (capabilities.csv's).
        drift: drift rows with capability and the verdict columns (drift.csv's, one row per membership).
    """
    if not target or drift.empty or "oriented_change" not in drift or "oriented_change" not in caps:
        return pd.DataFrame(columns=TARGET_COLUMNS)
    rows = drift[drift["capability"].astype(str) != ""].drop_duplicates(["variant", "capability", "task", "metric"])
    holding = rows[rows["task"] == target][["variant", "capability"]].drop_duplicates()
    found = caps[caps["level"] == "capability"].drop_duplicates(["variant", "key"]).set_index(["variant", "key"])
    out = []
    for variant, key in zip(holding["variant"].astype(str), holding["capability"].astype(str), strict=True):
        if (variant, key) not in found.index:
            continue
        cap = found.loc[(variant, key)]
        mine = rows[(rows["variant"] == variant) & (rows["capability"] == key)]
        others = mine[(mine["task"] != target) & mine["oriented_change"].notna()]
        change, low, high = _without(others)
        out.append({"variant": variant, "key": key, "target": target, "oriented_change": cap["oriented_change"], "change_ci_low": cap["change_ci_low"],
                    "change_ci_high": cap["change_ci_high"], "verdict": cap.get("verdict", ""),
                    "others": "; ".join(f"{t}/{m}" for t, m in zip(others["task"], others["metric"], strict=True)),
                    "without_change": change, "without_ci_low": low, "without_ci_high": high,
                    "without_verdict": str(others["verdict"].iloc[0]) if len(others) == 1 and "verdict" in others else ""})
    return pd.DataFrame(out, columns=TARGET_COLUMNS)
