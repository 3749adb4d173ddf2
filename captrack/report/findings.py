"""The leaderboard's short text: what drifted, per variant and per algorithm, in plain sentences.

Every sentence is computed from the capability table (relative drift with its bootstrap CI) and the
checkpoint table (chance-adjusted forgetting F_adj and backward transfer BT_adj). A drift counts as
"clear" only when its 95% CI excludes zero; everything else is reported as within noise.
"""

from __future__ import annotations

import math

import pandas as pd

__all__ = ["EXPECTATION", "findings"]

EXPECTATION = ("published expectation (CapTrack; Balasubramanian & Kasiviswanathan 2026): SFT drifts most, "
               "preference optimisation (DPO) and RL are more conservative")


def _pct(value: float) -> str:
    return f"{value:+.1f}%"


def _clear(rows: pd.DataFrame) -> pd.DataFrame:
    """Capabilities whose drift CI excludes zero."""
    return rows[(rows["ci_low"] > 0) | (rows["ci_high"] < 0)]


def _variant_sentence(name: str, algorithm: str, rows: pd.DataFrame, point: pd.Series | None) -> str:
    scored = rows.dropna(subset=["mean_rel_drift_pct"])
    if scored.empty:
        return f"{name} ({algorithm or 'no algorithm'}): no capability could be scored."
    clear = _clear(scored)
    drops, rises = clear[clear["mean_rel_drift_pct"] < 0], clear[clear["mean_rel_drift_pct"] > 0]
    text = (f"{name} ({algorithm or 'no algorithm'}): mean |drift| {scored['mean_rel_drift_pct'].abs().mean():.1f}% "
            f"over {len(scored)} capabilities; {len(drops)} fell and {len(rises)} rose beyond noise")
    if not drops.empty:
        worst = drops.loc[drops["mean_rel_drift_pct"].idxmin()]
        text += f"; largest drop {worst['key']} {_pct(worst['mean_rel_drift_pct'])}"
    if not rises.empty:
        best = rises.loc[rises["mean_rel_drift_pct"].idxmax()]
        text += f"; largest gain {best['key']} {_pct(best['mean_rel_drift_pct'])}"
    if point is not None and not math.isnan(float(point["forgetting_adj"])):
        text += (f"; F_adj {100 * float(point['forgetting_adj']):.1f}% of items forgotten vs "
                 f"BT_adj {100 * float(point['backward_transfer_adj']):.1f}% gained")
    return text + "."


def _algorithm_sentence(caps: pd.DataFrame) -> str | None:
    """Rank algorithms by mean |capability drift| and compare with the published expectation."""
    scored = caps.dropna(subset=["mean_rel_drift_pct"]).assign(magnitude=lambda f: f["mean_rel_drift_pct"].abs())
    by_algorithm = scored[scored["algorithm"].astype(bool)].groupby("algorithm")["magnitude"].mean().sort_values(ascending=False)
    if "SFT" not in by_algorithm.index or len(by_algorithm) < 2:
        return None
    ranking = ", ".join(f"{a} {m:.1f}%" for a, m in by_algorithm.items())
    verdict = "agrees with" if by_algorithm.index[0] == "SFT" else "does not agree with"
    return (f"Mean |drift| by algorithm: {ranking}. This {verdict} the {EXPECTATION}. With few items per "
            "capability, treat the ranking as indicative unless the capability CIs above exclude zero.")


def findings(caps: pd.DataFrame, checkpoints: pd.DataFrame) -> list[str]:
    """Sentences saying what drifted: one per variant, then one comparing algorithms (when SFT and another exist).

    Args:
        caps: the leaderboard's capability table (level, key, variant, algorithm, mean_rel_drift_pct,
            ci_low, ci_high).
        checkpoints: the leaderboard's checkpoint table (variant, forgetting_adj, backward_transfer_adj).
    """
    capability_rows = caps[caps["level"] == "capability"]
    points = checkpoints.set_index("variant") if not checkpoints.empty else pd.DataFrame()
    sentences = []
    for name, rows in capability_rows.groupby("variant", sort=False):
        algorithm = str(rows["algorithm"].iloc[0] or "")
        point = points.loc[name] if name in points.index else None
        sentences.append(_variant_sentence(str(name), algorithm, rows, point))
    comparison = _algorithm_sentence(capability_rows)
    if comparison:
        sentences.append(comparison)
    return sentences
