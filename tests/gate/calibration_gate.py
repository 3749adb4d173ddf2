"""How often the policy gate blocks a variant that should pass, by simulation (a script, not a test: it prints).

Each simulated variant has `CELLS` binary tasks of `N` paired items (base accuracy 0.6, items flipping each way
independently), every task a critical rule at margin `MARGIN`. Two truths:
- unchanged (true change 0 everywhere): a block needs Holm's rejection at a family-wise 2.5%, so the share of
  variants with any block must stay at or under 2.5% however many rules there are;
- at the margin (every task's true change exactly −MARGIN, the worst a "pass" may be): each cell blocks only when
  its own 95% CI lies wholly below −MARGIN, about 2.5% per cell one-sided, less with Holm on top.

    .venv/bin/python tests/gate/calibration_gate.py [VARIANTS]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from captrack.analysis.verdicts import paired_change
from captrack.gate.outcomes import evaluate
from captrack.gate.policy import load_policy

CELLS, N, MARGIN, FLIP = 10, 300, 3.0, 0.08


def _variant(rng: np.random.Generator, shift: float, name: str) -> pd.DataFrame:
    rows = []
    for t in range(CELLS):
        base = (rng.random(N) < 0.6).astype(float)
        lose = rng.random(N) < FLIP + max(-shift, 0.0) / 0.6  # extra losses among base-right items give the shift
        gain = rng.random(N) < FLIP * 0.6 / 0.4
        variant = np.where(base == 1, np.where(lose, 0.0, 1.0), np.where(gain, 1.0, 0.0))
        c = paired_change(base, variant, "binary", "higher", MARGIN)
        rows.append({"variant": name, "task": f"t{t}", "metric": "acc", "capability": "", "direction": "higher",
                     "base_value": base.mean(), "change_unit": "points", "oriented_change": c.delta,
                     "change_ci_low": c.ci95[0], "change_ci_high": c.ci95[1], "change_ci90_low": c.ci90[0],
                     "change_ci90_high": c.ci90[1], "verdict": c.verdict, "p_value": c.p_value})
    return pd.DataFrame(rows)


def main(variants: int) -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.yaml"
        path.write_text(f"margin: {MARGIN}\nrules:\n" + "".join(f"  - {{task: t{t}, tier: critical}}\n" for t in range(CELLS)))
        policy = load_policy(path)
        for label, shift in (("unchanged", 0.0), (f"true change -{MARGIN:g} points", -MARGIN / 100)):
            drift = pd.concat([_variant(rng, shift, f"v{i}") for i in range(variants)], ignore_index=True)
            result = evaluate(policy, None, drift)
            blocked = {o.variant for o in result.outcomes if o.outcome == "block"}
            cells = sum(o.outcome == "block" for o in result.outcomes)
            print(f"{label}: {len(blocked)}/{variants} variants with a block ({100 * len(blocked) / variants:.2f}%), "
                  f"{cells}/{variants * CELLS} cells blocked ({100 * cells / (variants * CELLS):.2f}%); "
                  f"mean change {drift['oriented_change'].mean():+.2f} points")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
