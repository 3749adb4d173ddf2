"""Leaderboard tables computed from the comparison tables: per algorithm and capability, and per checkpoint."""

from __future__ import annotations

import math

import pandas as pd

from captrack.report.numbers import is_significant
from captrack.taxonomy import load_taxonomy

__all__ = ["algorithm_summary", "checkpoint_rows"]


def algorithm_summary(caps: pd.DataFrame, aggregate_only: bool = False) -> pd.DataFrame:
    """Per algorithm and capability: mean drift over variants, a CI (none for aggregate scores), and mean F / BT."""
    out = []
    rows = caps[(caps["level"] == "capability") & caps["mean_rel_drift_pct"].notna()]
    for (algorithm, key), frame in rows.groupby(["algorithm", "key"], sort=True):
        values = frame["mean_rel_drift_pct"].to_numpy(dtype=float)
        mean = float(values.mean())
        if aggregate_only:
            low, high = math.nan, math.nan
        elif len(values) >= 2:
            half = 1.96 * float(values.std(ddof=1)) / math.sqrt(len(values))
            low, high = mean - half, mean + half
        else:
            low, high = float(frame["ci_low"].iloc[0]), float(frame["ci_high"].iloc[0])
        oriented = frame["oriented_drift_pct"] if "oriented_drift_pct" in frame else frame["mean_rel_drift_pct"]
        out.append({"algorithm": algorithm or "(none)", "key": key, "n_variants": len(values),
                    "mean_rel_drift_pct": mean, "ci_low": low, "ci_high": high,
                    "forgetting": frame["forgetting"].mean(), "backward_transfer": frame["backward_transfer"].mean(),
                    "oriented_drift_pct": oriented.mean()})
    order = {c.key: i for i, c in enumerate(load_taxonomy().capabilities)}
    frame = pd.DataFrame(out, columns=["algorithm", "key", "n_variants", "mean_rel_drift_pct", "ci_low", "ci_high",
                                       "forgetting", "backward_transfer", "oriented_drift_pct"])
    return frame.sort_values(["key", "algorithm"], key=lambda s: s.map(order) if s.name == "key" else s).reset_index(drop=True)


def checkpoint_rows(tables: dict[str, pd.DataFrame], variants: list[str]) -> pd.DataFrame:
    """Per variant: its labels, group drifts (CAN, WILL, HOW; relative, %), mean F_adj / BT_adj, and how many of its
    task metrics with a verdict are significant (verdict regressed, improved or changed: the 95% CI of Δ excludes 0)."""
    caps, trans = tables["capabilities"], tables["transitions"].drop_duplicates(["variant", "task", "metric"])
    drift = tables["drift"].drop_duplicates(["variant", "task", "metric"])
    verdicts = drift["verdict"] if "verdict" in drift else pd.Series("", index=drift.index, dtype=object)
    judged = drift.assign(verdict=verdicts)[verdicts.map(lambda v: isinstance(v, str) and v != "")]
    out = []
    for name in variants:
        lab = tables["labels"].set_index("variant").loc[name]
        groups = caps[(caps["variant"] == name) & (caps["level"] == "group")].set_index("key")["mean_rel_drift_pct"]
        t = trans[trans["variant"] == name]
        mine = judged[judged["variant"] == name]
        algorithm = caps.loc[caps["variant"] == name, "algorithm"].iloc[0]
        out.append({"variant": name, "base": lab["base"], "family": lab["family"], "size": lab["size"],
                    "algorithm": algorithm, "data": lab["data"],
                    **{g: groups.get(g, math.nan) for g in ("CAN", "WILL", "HOW")},
                    "forgetting_adj": t["forgetting_adj"].astype(float).mean() if len(t) else math.nan,
                    "backward_transfer_adj": t["backward_transfer_adj"].astype(float).mean() if len(t) else math.nan,
                    "significant_tasks": int(sum(is_significant(v) for v in mine["verdict"])), "tasks": len(mine)})
    return pd.DataFrame(out)
