"""The policy gate's block rule is family-wise at the margin, strict mode fails only on a family-wise regression,
and gate.md / gate.json state each rule's blocking MDE (issue 53, item 5).

Each cell below is a real verdict: `paired_change` on 500 paired 0/1 items with the given transition counts
(n11, n10, n01, n00), base accuracy 0.6; the change is 100 (n01 − n10) / 500 points.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from captrack.analysis.verdicts import paired_change
from captrack.gate.outcomes import evaluate
from captrack.gate.policy import load_policy
from captrack.gate.report_files import gate_json, gate_markdown

AT_MARGIN = (255, 45, 20, 180)  # -5.0 points: exactly at the margin, 95% CI about [-8.3, -1.6]
MARGINAL = (236, 64, 20, 180)  # -8.8 [-12.48, -5.32]: its own 95% CI below -5, one-sided p at -5 = 0.016
FAR = (226, 74, 20, 180)  # -10.8 [-14.6, -7.2]: p at -5 = 0.0009, below 2.5% / 14
UNCHANGED = (280, 20, 20, 180)  # 0.0 [-2.5, +2.5]
SMALL_DROP = (262, 38, 10, 190)  # -5.6 points, inside a margin of 25: a significant regression


def _row(key: str, counts: tuple[int, int, int, int]) -> dict[str, object]:
    n11, n10, n01, n00 = counts
    base = np.array([1.0] * (n11 + n10) + [0.0] * (n01 + n00))
    variant = np.array([1.0] * n11 + [0.0] * n10 + [1.0] * n01 + [0.0] * n00)
    c = paired_change(base, variant, "binary", "higher", 5.0)
    return {"variant": "cand", "level": "capability", "key": key, "base_value": base.mean(),
            "variant_value": variant.mean(), "oriented_change": c.delta, "change_ci_low": c.ci95[0],
            "change_ci_high": c.ci95[1], "change_ci90_low": c.ci90[0], "change_ci90_high": c.ci90[1],
            "verdict": c.verdict, "p_value": c.p_value}


def _gate(tmp_path: Path, cells: list[tuple[int, int, int, int]], head: str = "margin: 5\n") -> object:
    keys = [f"K{i}" for i in range(len(cells))]
    path = tmp_path / f"policy{len(cells)}.yaml"
    path.write_text(head + "rules:\n" + "".join(f"  - {{capability: {k}, tier: critical}}\n" for k in keys))
    capabilities = pd.DataFrame([_row(k, c) for k, c in zip(keys, cells, strict=True)])
    return evaluate(load_policy(path), capabilities, None)


def test_every_capability_at_the_margin_is_not_blocked_by_one_marginal_rule_that_holm_does_not_reject(tmp_path: Path) -> None:
    # 13 capabilities exactly at -5 and one whose own 95% CI just clears -5 (p = 0.016 at the margin): Holm's first
    # step over 14 asks p <= 2.5% / 14 = 0.0018, so "beyond the margin" is not shown family-wise: a warn, no block
    result = _gate(tmp_path, [AT_MARGIN] * 13 + [MARGINAL])
    marginal = result.outcomes[-1]
    assert [o.outcome for o in result.outcomes] == ["warn"] * 14 and result.decisions == {"cand": "warn"}
    assert marginal.reason == "a significant regression, not rejected in Holm's family"
    assert marginal.cells[0].ci95[1] < -5 and marginal.cells[0].holm_rejects  # a regression, family-wise...
    assert 0.0018 < marginal.cells[0].p_beyond < 0.025 and not marginal.cells[0].beyond_rejects  # ...not beyond -5
    # alone, the same cell is its own family: Holm at 2.5% is its 95% CI below -5, and it blocks
    alone = _gate(tmp_path, [MARGINAL])
    assert alone.outcomes[0].outcome == "block" and alone.decisions == {"cand": "fail"}
    # among the 14, a cell far enough beyond (p = 0.0009 at the margin) still blocks
    far = _gate(tmp_path, [AT_MARGIN] * 13 + [FAR])
    assert [o.outcome for o in far.outcomes][-1] == "block" and far.exit_status == 3


def test_strict_fails_only_on_a_family_wise_regression(tmp_path: Path) -> None:
    # a per-cell warn (13 unchanged cells and one significant regression that Holm over 14 does not reject: p at 0
    # of the regression is about 0.0056 / 2 > 2.5% / 14): reported as warn, decision pass under strict, exit 0
    weak = (268, 32, 15, 185)  # -3.4 points, 95% CI about [-6.3, -0.6]
    result = _gate(tmp_path, [UNCHANGED] * 13 + [weak], "margin: 5\nstrict: true\n")
    assert result.outcomes[-1].outcome == "warn" and not result.outcomes[-1].cells[0].holm_rejects
    assert result.decisions == {"cand": "pass"} and result.exit_status == 0
    assert _gate(tmp_path, [UNCHANGED] * 13 + [weak], "margin: 5\nstrict: false\n").decisions == {"cand": "warn"}
    # a regression Holm rejects, inside a margin of 25: warn, and strict exits 4
    strong = _gate(tmp_path, [UNCHANGED] * 13 + [SMALL_DROP], "margin: 25\nstrict: true\n")
    assert strong.outcomes[-1].outcome == "warn" and strong.outcomes[-1].cells[0].holm_rejects
    assert strong.decisions == {"cand": "warn"} and strong.exit_status == 4


def test_gate_markdown_and_json_state_each_rules_blocking_mde(tmp_path: Path) -> None:
    result = _gate(tmp_path, [UNCHANGED, AT_MARGIN, MARGINAL])
    transitions = pd.DataFrame([{"variant": "cand", "task": f"t{i}", "metric": "acc", "capability": f"K{i}", "group": "G",
                                 "n": 500, "n_10": 0, "n_01": 0} for i in range(3)])
    markdown = gate_markdown(result, transitions)
    assert ("| rule | outcome | change [95% CI] | 90% CI | margin | blocking MDE | what these items detect (80% power) "
            "| why |") in markdown
    report = json.loads(gate_json(result))
    for o, entry in zip(result.outcomes, report["rules"], strict=True):
        cell = o.cells[0]
        se = (cell.ci95[1] - cell.ci95[0]) / (2 * norm.ppf(0.975))
        expected = 5.0 + (norm.ppf(1 - 0.025 / 3) + norm.ppf(0.80)) * se  # Holm's first step over 3 cells
        assert cell.mde_block == pytest.approx(expected, rel=1e-9)
        assert f"| {cell.margin:g} | −{expected:.1f} |" in markdown  # the margin column, then the MDE
        detects = (norm.ppf(0.975) + norm.ppf(0.80)) * se  # the power hint (issue 56): what its 500 items detect
        assert f"| these 500 items detect ≥ {detects:.1f} points" in markdown
        if detects > 5.0:
            assert f"~{math.ceil(500 * (detects / 5.0) ** 2):,} would detect 5 |" in markdown
        assert entry["cells"][0]["blocking_mde"] == pytest.approx(expected, abs=1e-6)
    assert report["blocking_mde_power"] == 0.8 and "per-cell warning with probability" in markdown


def test_the_margin_p_value_is_the_intervals_own_test() -> None:
    from captrack.gate.margin_tests import beyond_pvalue, block_mde, null_warn_share

    # a Wald interval (symmetric): the p-value is the exact one-sided normal test of H0: change >= -margin
    delta, se, margin = -7.3, 1.6, 5.0
    high = delta + norm.ppf(0.975) * se
    assert beyond_pvalue(delta, high, margin) == pytest.approx(norm.cdf((delta + margin) / se), rel=1e-12)
    assert beyond_pvalue(-6.0, -5.0, 5.0) == pytest.approx(0.025, rel=1e-12)  # the upper limit at -M: exactly 2.5%
    assert beyond_pvalue(-6.0, -6.0, 5.0) == 0.0 and beyond_pvalue(0.0, 0.0, 5.0) == 1.0  # zero width
    assert math.isnan(beyond_pvalue(math.nan, -6.0, 5.0)) and math.isnan(block_mde((math.nan, 1.0), 5.0, 3))
    # the per-cell null warn rate, normal approximation: 2.5% when the margin is wide, more when the 90% CI reaches it
    assert null_warn_share((-1.0, 1.0), 50.0) == pytest.approx(0.025, rel=1e-9)
    se = 2.0 / norm.ppf(0.975)
    assert null_warn_share((-2.0, 2.0), 3.0) == pytest.approx(norm.cdf(norm.ppf(0.95) - 3.0 / se), rel=1e-9)
