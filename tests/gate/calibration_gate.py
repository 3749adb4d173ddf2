"""How often the policy gate blocks, warns and fails, by simulation through `gate.outcomes.evaluate` (a script,
not a test: it prints each rate with its Monte Carlo standard error).

Each simulated variant has binary tasks of paired items (base accuracy 0.6), every task a critical rule. Items
flip each way independently: a share `noise` of all items is lost and the same share gained (no change), and a
true change of c points adds |c|% of the items as extra losses. Every cell is judged by `paired_change` (the
verdict's Tango score interval) and the whole variant by `evaluate`, the gate's own code.

Part 1, the README's figures (10 rules of 300 items, margin 3, noise 4.8%): unchanged, and every task truly at −3.
Part 2, issue 53's (14 rules of 500 items, margin 5, noise 5%, `strict: true`), each with its target:
- every cell exactly at the margin (−5): variants with a block ≤ 5% (Holm over "not beyond the margin": ≤ 2.5%);
- unchanged: variants that fail the strict gate (exit 3 or 4) ≤ 5%; the per-cell warn rate (without strict)
  beside what gate.md predicts for it;
- the block rule's power against one cell at −(M + 2) and −(M + 5), among 14 rules and alone, beside the
  blocking MDE gate.md prints for that cell.

    .venv/bin/python tests/gate/calibration_gate.py [VARIANTS]     # default 2000: ~5 min on 2 shared cores

The README part's unchanged row has a target of 2.5% and its at-the-margin row 5%; part 2's targets are above.
It exits 1 when a figure is outside its target.
"""

from __future__ import annotations

import math
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from captrack.analysis.verdicts import paired_change
from captrack.gate.margin_tests import variant_null_warn_share
from captrack.gate.outcomes import GateResult, evaluate
from captrack.gate.policy import Policy, load_policy


def _cell(rng: np.random.Generator, n: int, noise: float, shift: float, margin: float, name: str, task: str) -> dict[str, object]:
    base = (rng.random(n) < 0.6).astype(float)
    lose = rng.random(n) < (noise + max(-shift, 0.0)) / 0.6  # losses among base-right items: noise + the change
    gain = rng.random(n) < noise / 0.4
    variant = np.where(base == 1, np.where(lose, 0.0, 1.0), np.where(gain, 1.0, 0.0))
    c = paired_change(base, variant, "binary", "higher", margin)
    return {"variant": name, "task": task, "metric": "acc", "capability": "", "direction": "higher",
            "base_value": base.mean(), "variant_value": variant.mean(), "change_unit": "points",
            "oriented_change": c.delta, "change_ci_low": c.ci95[0], "change_ci_high": c.ci95[1],
            "change_ci90_low": c.ci90[0], "change_ci90_high": c.ci90[1], "verdict": c.verdict, "p_value": c.p_value}


def simulate(rng: np.random.Generator, variants: int, shifts: Sequence[float], n: int, noise: float,
             margin: float) -> pd.DataFrame:
    """drift.csv rows of `variants` variants, cell t of each at true change shifts[t] (a share, −0.05: −5 points)."""
    return pd.DataFrame([_cell(rng, n, noise, shift, margin, f"v{i}", f"t{t}")
                         for i in range(variants) for t, shift in enumerate(shifts)])


def policy(folder: Path, cells: int, margin: float, strict: bool) -> Policy:
    path = folder / f"p{cells}-{margin:g}-{strict}.yaml"
    path.write_text(f"margin: {margin}\nstrict: {str(strict).lower()}\nrules:\n"
                    + "".join(f"  - {{task: t{t}, tier: critical}}\n" for t in range(cells)))
    return load_policy(path)


MISSES: list[str] = []
"""The figures outside their target so far (main exits 1 when any is)."""


def _check(label: str, hits: int, total: int, target: float) -> str:
    """The rate with its target (a share in %, at most), noted in MISSES when it is above it."""
    if 100 * hits / total > target:
        MISSES.append(f"{label}: {_rate(hits, total)} > {target:g}%")
    return f"(target <= {target:g}%)"


def _rate(hits: int, total: int) -> str:
    p = hits / total
    return f"{hits}/{total} = {100 * p:.2f}% ± {100 * math.sqrt(max(p * (1 - p), 1.0 / total) / total):.2f} (MC SE)"


def _blocked(result: GateResult, rule: str | None = None) -> int:
    return len({o.variant for o in result.outcomes if o.outcome == "block" and (rule is None or o.rule.target == rule)})


def readme_part(rng: np.random.Generator, folder: Path, variants: int) -> None:
    cells, n, margin = 10, 300, 3.0
    gate = policy(folder, cells, margin, False)
    for label, shift in (("unchanged", 0.0), (f"true change -{margin:g} points", -margin / 100)):
        drift = simulate(rng, variants, [shift] * cells, n, 0.048, margin)
        result = evaluate(gate, None, drift)
        blocks = sum(o.outcome == "block" for o in result.outcomes)
        target = _check(f"README {label}", _blocked(result), variants, 2.5 if shift == 0 else 5.0)
        print(f"[README] {cells} rules x {n} items, margin {margin:g}, {label}: variants with a block "
              f"{_rate(_blocked(result), variants)} {target}; cells blocked {_rate(blocks, variants * cells)}")


def issue_part(rng: np.random.Generator, folder: Path, variants: int) -> None:
    cells, n, margin, noise = 14, 500, 5.0, 0.05
    strict, loose = policy(folder, cells, margin, True), policy(folder, cells, margin, False)
    at_margin = evaluate(strict, None, simulate(rng, variants, [-margin / 100] * cells, n, noise, margin))
    target = _check("all at the margin", _blocked(at_margin), variants, 5.0)
    print(f"[53] all {cells} cells at exactly -{margin:g}: variants with a block {_rate(_blocked(at_margin), variants)} "
          f"{target}")
    drift = simulate(rng, variants, [0.0] * cells, n, noise, margin)
    result = evaluate(strict, None, drift)
    failed = sum(d != "pass" for d in result.decisions.values())
    target = _check("unchanged, strict", failed, variants, 5.0)
    print(f"[53] unchanged, strict: true: variants failing (exit 3 or 4) {_rate(failed, variants)} {target}; "
          f"blocked {_rate(_blocked(result), variants)}")
    per_cell = evaluate(loose, None, drift)
    warned = sum(d == "warn" for d in per_cell.decisions.values())
    predicted = np.mean([variant_null_warn_share(c.null_warn for o in per_cell.for_variant(v) for c in o.cells)
                         for v in per_cell.decisions])
    print(f"[53] unchanged, strict: false: variants with a per-cell warn decision {_rate(warned, variants)}; "
          f"gate.md predicts {100 * predicted:.1f}%")
    one = policy(folder, 1, margin, True)
    for extra in (2.0, 5.0):
        shift = -(margin + extra) / 100
        among = evaluate(strict, None, simulate(rng, variants, [shift] + [0.0] * (cells - 1), n, noise, margin))
        alone = evaluate(one, None, simulate(rng, variants, [shift], n, noise, margin))
        for label, found in ((f"among {cells} rules", among), ("a one-rule policy", alone)):
            mde = np.mean([o.cells[0].mde_block for o in found.outcomes if o.rule.target == "t0"])
            print(f"[53] power, one cell at -{margin + extra:g} (margin + {extra:g}), {label}, n = {n}: blocked "
                  f"{_rate(_blocked(found, 't0'), variants)}; gate.md's blocking MDE for it: -{mde:.1f} points")


def main(variants: int) -> int:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        readme_part(rng, folder, variants)
        issue_part(rng, folder, variants)
    print(f"{len(MISSES)} figures outside their target (power rows have none)")
    for miss in MISSES:
        print(f"MISS {miss}")
    return 1 if MISSES else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
