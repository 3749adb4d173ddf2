"""The demo's findings in one table: per algorithm the target change, mean |drift|, F_adj and 1 − BC with 95% CIs.

    python tests/benchmarks/demo_findings.py [--board leaderboards/demo]

Reads the board's leaderboard.yaml and store (run `make demo` first) and recomputes the comparison the
page shows (same bootstrap count and seed), keeping the per-algorithm resamples that rankings.csv
reduces to pairwise differences: each value's CI is the percentile interval of the same paired item
resamples. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _ci(point: float, samples: Any, scale: float = 1.0) -> str:
    from captrack.analysis.stats import percentile_ci

    if samples is None or math.isnan(point):
        return "n/a"
    low, high = percentile_ci(samples, 0.95)
    return f"{scale * point:.2f} [{scale * low:.2f}, {scale * high:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--board", type=Path, default=ROOT / "leaderboards" / "demo")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import captrack.analysis.comparison as compare
    from captrack.analysis import contrasts, ranking
    from captrack.compare.board import board_comparisons
    from captrack.report.leaderboard import load_spec
    from captrack.taxonomy import load_taxonomy

    captured: dict[str, Any] = {}
    original = compare._contrasts

    def keep(*call: Any) -> Any:
        captured["args"] = call
        return original(*call)

    compare._contrasts = keep  # type: ignore[assignment]
    spec = load_spec(args.board)
    comparison, _ = board_comparisons(spec)[0]
    with_rates, boot, taxonomy, options, _base, variants, items, transitions, dist_items = captured["args"]
    magnitudes = ranking._magnitudes(with_rates, boot, taxonomy or load_taxonomy())
    f_series = contrasts._forgetting_series(items, transitions, options.bootstrap, options.seed)
    bc_series = contrasts._bc_series(dist_items.one_minus_bc, options.bootstrap, options.seed)
    drift = comparison.drift
    print(f"board {args.board} (bootstrap {options.bootstrap}, seed {options.seed}); target {spec.target or '(none)'}")
    print("| algorithm | target: base -> variant (change, 95% CI of relative drift) | mean abs drift % | F_adj % | 1 - BC % |")
    print("|---|---|---|---|---|")
    for variant in variants:
        target = drift[(drift["variant"] == variant.name) & (drift["task"] == spec.target)].head(1)
        said = "n/a"
        if len(target):
            row = target.iloc[0]
            said = (f"{row.base_value:.3f} -> {row.variant_value:.3f} ({row.rel_drift_pct:+.1f}%, "
                    f"[{row.ci_low:+.1f}, {row.ci_high:+.1f}])")
        cells = []
        for series, scale in ((f_series, 100.0), (bc_series, 100.0)):
            units = sorted(u for (v, u) in series if v == variant.name)
            if units:
                point, samples = contrasts._algorithm_value(series, [variant.name], units)
                cells.append(_ci(point, samples, scale) + f" over {len(units)} task(s)")
            else:
                cells.append("n/a")
        point, samples = magnitudes.get(variant.algorithm, (math.nan, None))
        print(f"| {variant.algorithm} ({variant.name}) | {said} | {_ci(point, samples)} | {cells[0]} | {cells[1]} |")
    print()
    print(comparison.contrasts.to_string(index=False))


if __name__ == "__main__":
    main()
