"""The sentence that marks the post-training's target inside its capability: the capability's change with the
target and without it (captrack.analysis.target_share computed both). Plain text: each page escapes it."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from captrack.report.numbers import change_text, missing, verdict_text

__all__ = ["target_capability_sentences"]


def target_capability_sentences(rows: pd.DataFrame, units: Mapping[tuple[str, str], str], margin: float = 5.0) -> list[str]:
    """Per row of target_share.without_target: the capability's Δ with its verdict, then its Δ without the target."""
    out = []
    for r in rows.to_dict("records"):
        unit = units.get((str(r["variant"]), str(r["key"])), "points")
        said = verdict_text(r["oriented_change"], r["change_ci_low"], r["change_ci_high"], unit, r["verdict"], margin)
        head = (f"{r['key']} holds the target {r['target']}: for {r['variant']}, {r['key']} "
                f"{said or change_text(r['oriented_change'], r['change_ci_low'], r['change_ci_high'], unit)}")
        if missing(r["without_change"]):
            out.append(f"{head}; without the target it has no other scored member, so all of its change is the target's.")
            continue
        others = str(r["others"]).split("; ")
        bound = (" (a CI as if those members moved together: the widest it can be)" if len(others) > 1 else "")
        alone = verdict_text(r["without_change"], r["without_ci_low"], r["without_ci_high"], unit, r["without_verdict"], margin)
        shown = alone or f"{change_text(r['without_change'], r['without_ci_low'], r['without_ci_high'], unit)}{bound}, no verdict"
        out.append(f"{head}; without the target ({', '.join(others)}): {shown}.")
    return out
