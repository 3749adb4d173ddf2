"""A gate policy applied to a comparison: one outcome per (variant, rule), one decision per variant.

Every number is the comparison's own: each cell's oriented change with its 95% and 90% CIs and the
two-sided p-value of the test its interval inverts (captrack.analysis.verdicts). A rule's cells are its
capability's or group's row of capabilities.csv, or its task's oriented metrics in drift.csv.

Per cell, with the rule's margin M (the relative guard makes it min(M, share x base score)):
- **block**: Holm's step-down test over the variant's gating cells (critical and supporting; advisory cells form
  a family of their own) rejects the margin-shifted hypothesis H0: Δ ≥ −M at a family-wise error of GATE_ALPHA =
  2.5% (captrack.gate.margin_tests: each cell's one-sided p-value at −M from its own interval; a rejected cell's
  95% CI lies below −M). "Regressed beyond the margin" is thus family-wise controlled: a variant whose every
  cell sits exactly at −M blocks at most 2.5% of the time, however many rules the policy has (and a variant
  that regressed nowhere, less). Each cell states its blocking MDE: the regression it blocks with 80% power
  when it is the only cell beyond its margin (margin_tests.block_mde).
- **warn**: a significant regression that is not a block (inside the margin, or not rejected in Holm's
  family), or a change whose 90% CI reaches below −M (inconclusive at this margin). Per cell: an unchanged
  cell warns with probability about max(2.5%, P(90% CI below −M)) (margin_tests.null_warn_share), so an
  unchanged variant of many rules often warns (42% at 14 rules of 500 items, margin 5);
- **pass**: improved, or the 90% CI lies above −M (equivalent, or better, within the margin: the lower
  half of the verdicts' equivalence test);
- **missing**: the comparison has no row for the target, did not measure it, or measured it without a per-item
  CI (aggregate scores): no verdict, the reason saying which.
A rule's outcome is its worst cell's (block, missing, warn, pass).

Decision per variant: **fail** where a critical or supporting rule blocks, or a required one is missing;
otherwise **warn** where a critical rule warns (or misses without being required); otherwise **pass**.
Under `strict: true`, where a warn decision exits non-zero, a critical rule's warn counts only when it is
family-wise: a regression that Holm's test over the gating cells rejects at GATE_ALPHA on the one-sided
p-values `--fail-on` uses (verdicts.regression_pvalue, holm_rejected); so an unchanged variant fails a strict
gate at most 2.5% of the time. Advisory rules are reported and never change the decision. Exit status:
GATE_EXIT (3) if any variant fails; WARN_EXIT (4) if the policy says `strict: true` and any variant warns; 0
otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from captrack.analysis.verdicts import GATE_ALPHA, holm_rejected, regression_pvalue
from captrack.errors import InputError, close_matches
from captrack.gate.fail_on import GATE_EXIT, WARN_EXIT
from captrack.gate.margin_tests import beyond_pvalue, block_mde, null_warn_share
from captrack.gate.policy import Policy, Rule

__all__ = ["OUTCOMES", "Cell", "GateResult", "RuleOutcome", "evaluate"]

OUTCOMES = ("block", "missing", "warn", "pass")  # worst first
_VERDICTS = ("regressed", "improved", "equivalent", "inconclusive")


@dataclass(frozen=True)
class Cell:
    """One gated row: a capability, group or (task, metric) of one variant, with its outcome."""

    key: str  # C1, CAN, or task/metric
    unit: str  # points, or % of base
    change: float
    ci95: tuple[float, float]
    ci90: tuple[float, float]
    verdict: str
    p_regressed: float  # one-sided p-value of a regression
    margin: float  # the effective margin (the relative guard applied)
    holm_rejects: bool  # Holm rejects "no regression" (H0: Δ ≥ 0): a family-wise regression
    outcome: str
    reason: str
    p_beyond: float = math.nan  # one-sided p-value of "not beyond the margin" (H0: Δ ≥ −margin)
    beyond_rejects: bool = False  # Holm rejects it: the block rule
    mde_block: float = math.nan  # the regression this cell blocks with 80% power (margin_tests.block_mde)
    null_warn: float = math.nan  # P(an unchanged cell of this width warns) (margin_tests.null_warn_share)


@dataclass(frozen=True)
class RuleOutcome:
    """One rule's outcome for one variant."""

    variant: str
    rule: Rule
    outcome: str
    reason: str
    cells: tuple[Cell, ...]
    counts: bool  # whether it moves the variant's decision (a fail or warn from a gating rule)


@dataclass(frozen=True)
class GateResult:
    """What a policy decided: the outcomes per (variant, rule), the decision per variant and the exit status."""

    policy: Policy
    outcomes: tuple[RuleOutcome, ...]
    decisions: dict[str, str]
    exit_status: int

    def for_variant(self, variant: str) -> list[RuleOutcome]:
        """The outcomes of one variant, in the policy's order."""
        return [o for o in self.outcomes if o.variant == variant]


def evaluate(policy: Policy, capabilities: pd.DataFrame | None, drift: pd.DataFrame | None) -> GateResult:
    """Apply `policy` to a comparison's capabilities.csv and drift.csv tables (see the module docstring).

    Raises:
        InputError: the comparison has no variant, or a rule names a capability, group, task or metric that
            neither the comparison nor (for a required rule) anything else can resolve.
    """
    capabilities = capabilities if capabilities is not None else pd.DataFrame(columns=["variant", "level", "key"])
    drift = drift if drift is not None else pd.DataFrame(columns=["variant", "task", "metric", "direction"])
    variants = list(dict.fromkeys([*capabilities["variant"].astype(str), *drift["variant"].astype(str)]))
    if not variants:
        raise InputError(f"{policy.source}: the comparison holds no variant to gate (its capabilities.csv and drift.csv are empty)")
    _check_names(policy, capabilities, drift)
    outcomes: list[RuleOutcome] = []
    caps, rows = _by_variant(capabilities), _by_variant(drift)
    for variant in variants:
        outcomes += _variant_outcomes(policy, variant, caps.get(variant, []), rows.get(variant, []))
    decisions = {v: _decision([o for o in outcomes if o.variant == v]) for v in variants}
    status = GATE_EXIT if "fail" in decisions.values() else (
        WARN_EXIT if policy.strict and "warn" in decisions.values() else 0)
    return GateResult(policy, tuple(outcomes), decisions, status)


def _by_variant(table: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """The table's rows as records, per variant, in the table's order (read once, not once per variant and rule)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for record in table.to_dict("records"):
        out.setdefault(str(record["variant"]), []).append(record)
    return out


def _check_names(policy: Policy, capabilities: pd.DataFrame, drift: pd.DataFrame) -> None:
    """A rule naming something the comparison lacks is an error, unless it is required (then it is `missing`)."""
    known = {"capability": set(capabilities.loc[capabilities["level"] == "capability", "key"].astype(str)),
             "group": set(capabilities.loc[capabilities["level"] == "group", "key"].astype(str)),
             "task": set(drift["task"].astype(str))}
    for rule in policy.rules:
        where = f"{policy.source}: rules[{rule.index}]"
        if rule.target not in known[rule.kind]:
            if rule.required:
                continue
            hints = close_matches(rule.target, known[rule.kind])
            hint = f"; did you mean {', '.join(repr(h) for h in hints)}?" if hints else ""
            raise InputError(f"{where}: unknown {rule.kind} {rule.target!r}: this comparison has none by that name{hint} "
                             "(mark the rule `required: true` to fail the gate when it is missing)")
        if rule.kind == "task" and rule.metric is not None and rule.target in known["task"]:
            rows = drift[drift["task"].astype(str) == rule.target]
            metrics = set(rows["metric"].astype(str))
            if rule.metric not in metrics:
                raise InputError(f"{where}: key 'metric': task {rule.target!r} has no metric {rule.metric!r} "
                                 f"in this comparison; it has {', '.join(sorted(metrics))}")
            if set(rows.loc[rows["metric"].astype(str) == rule.metric, "direction"].astype(str)) == {"neutral"}:
                raise InputError(f"{where}: key 'metric': {rule.target}/{rule.metric} has no better side (neutral), "
                                 "so a gate cannot tell a regression; gate another metric")


def _variant_outcomes(policy: Policy, variant: str, capabilities: list[dict[str, Any]],
                      drift: list[dict[str, Any]]) -> list[RuleOutcome]:
    """Each rule's outcome for one variant, Holm's tests run over its gating cells (and its advisory cells apart)."""
    raw = [(rule, _rows(rule, capabilities, drift)) for rule in policy.rules]
    tests: dict[tuple[int, int], tuple[bool, bool, int]] = {}
    for gating in (True, False):
        family = [(rule, i, row) for rule, rows in raw if rule.gating == gating for i, row in enumerate(rows)]
        regression = [_p_regressed(row) for _, _, row in family]
        beyond = [_p_beyond(rule, row) for rule, _, row in family]
        size = sum(not math.isnan(p) for p in beyond)
        for (rule, i, _), r, b in zip(family, holm_rejected(regression, GATE_ALPHA), holm_rejected(beyond, GATE_ALPHA),
                                      strict=True):
            tests[(rule.index, i)] = (r, b, size)
    out = []
    for rule, rows in raw:
        cells = tuple(_cell(rule, row, *tests[(rule.index, i)]) for i, row in enumerate(rows))
        outcome, reason = _rule_outcome(rule, cells)
        family_wise = not policy.strict or any(c.outcome == "warn" and c.holm_rejects for c in cells)
        counts = rule.gating and (outcome == "block" or (outcome == "missing" and rule.required)
                                  or (rule.tier == "critical" and (outcome == "missing" or (outcome == "warn" and family_wise))))
        out.append(RuleOutcome(variant, rule, outcome, reason, cells, counts))
    return out


def _rows(rule: Rule, capabilities: list[dict[str, Any]], drift: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rule's rows of one variant: its capability's or group's first row, or its task's (task, metric)s with a
    better side (the rule's metric only, where it names one), each once, in the table's order."""
    if rule.kind in ("capability", "group"):
        found = [r for r in capabilities if r["level"] == rule.kind and str(r["key"]) == rule.target][:1]
        return [dict(r, key=rule.target, change_unit="points") for r in found]
    out, seen = [], set()
    for r in drift:
        which = (str(r["task"]), str(r["metric"]))
        if (which[0] != rule.target or (rule.metric is not None and which[1] != rule.metric)
                or str(r["direction"]) == "neutral" or which in seen):
            continue
        seen.add(which)
        out.append(dict(r, key=f"{r['task']}/{r['metric']}"))
    return out


def _number(row: dict[str, Any], column: str) -> float:
    try:
        return float(row.get(column, math.nan))
    except (TypeError, ValueError):
        return math.nan


def _p_regressed(row: dict[str, Any]) -> float:
    return regression_pvalue(_number(row, "p_value"), _number(row, "oriented_change"))


def _p_beyond(rule: Rule, row: dict[str, Any]) -> float:
    return beyond_pvalue(_number(row, "oriented_change"), _number(row, "change_ci_high"), _margin(rule, row))


def _margin(rule: Rule, row: dict[str, Any]) -> float:
    """The rule's margin, with its relative guard: min(M, share x base score) (the score on its better side)."""
    if rule.relative is None:
        return rule.margin
    if str(row.get("change_unit", "points")) != "points":  # a count metric's change is already % of its base mean
        return min(rule.margin, 100.0 * rule.relative)
    base = _number(row, "base_value")
    if math.isnan(base):
        return rule.margin
    score = 100.0 * (1.0 - base if str(row.get("direction")) == "lower" else base)
    return min(rule.margin, rule.relative * max(score, 0.0))


def _cell(rule: Rule, row: dict[str, Any], holm_rejects: bool, beyond_rejects: bool, family: int) -> Cell:
    margin = _margin(rule, row)
    change, verdict = _number(row, "oriented_change"), str(row.get("verdict") or "")
    ci95 = (_number(row, "change_ci_low"), _number(row, "change_ci_high"))
    ci90 = (_number(row, "change_ci90_low"), _number(row, "change_ci90_high"))
    if verdict not in _VERDICTS or any(math.isnan(x) for x in (change, *ci95, *ci90)):
        outcome, reason = "missing", _no_verdict(row)
    elif beyond_rejects and ci95[1] < -margin:
        outcome, reason = "block", (f"regressed beyond the margin: the whole 95% CI lies below −{margin:g}, and Holm's "
                                    f"test rejects 'not beyond −{margin:g}' at a family-wise {100 * GATE_ALPHA:g}%")
    elif verdict == "regressed":
        why = "inside the margin" if ci95[1] >= -margin else "not rejected in Holm's family"
        outcome, reason = "warn", f"a significant regression, {why}"
    elif verdict == "improved":
        outcome, reason = "pass", "improved"
    elif ci90[0] > -margin:
        outcome, reason = "pass", f"within the margin: the 90% CI lies above −{margin:g}"
    else:
        outcome, reason = "warn", f"inconclusive: the 90% CI reaches below −{margin:g}"
    return Cell(str(row["key"]), str(row.get("change_unit") or "points"), change, ci95, ci90, verdict,
                _p_regressed(row), margin, holm_rejects, outcome, reason, _p_beyond(rule, row), beyond_rejects,
                block_mde(ci95, margin, family), null_warn_share(ci95, margin))


def _no_verdict(row: dict[str, Any]) -> str:
    """Why a row the comparison holds has no verdict: nothing of it was measured, or no per-item CI."""
    if math.isnan(_number(row, "base_value")) or math.isnan(_number(row, "variant_value")):
        return "not measured: the comparison has no score of it for this variant"
    return ("no verdict: measured without a per-item CI (aggregate scores, or items left unscored), so the gate "
            "cannot tell a regression from noise; gate a comparison of per-item results (lm-eval --log_samples)")


def _rule_outcome(rule: Rule, cells: tuple[Cell, ...]) -> tuple[str, str]:
    if not cells:
        where = "in this comparison" if rule.kind != "task" else "among this variant's tasks (with a better side)"
        return "missing", f"no {rule.kind} {rule.target!r} {where}" + ("" if rule.required else " (not required)")
    worst = min(cells, key=lambda c: OUTCOMES.index(c.outcome))
    reason = worst.reason if len(cells) == 1 else f"{worst.key}: {worst.reason}"
    if worst.outcome == "missing" and not rule.required:
        reason += " (not required)"
    return worst.outcome, reason


def _decision(outcomes: list[RuleOutcome]) -> str:
    counted = [o for o in outcomes if o.counts]
    if any(o.outcome == "block" or (o.outcome == "missing" and o.rule.required) for o in counted):
        return "fail"
    return "warn" if counted else "pass"
