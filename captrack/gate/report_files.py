"""A gate's outcomes as Markdown (a merge request or model card), JSON, and JUnit XML (CI test reports).

JUnit XML: one `<testsuite>` per variant, one `<testcase>` per rule (name: the rule, e.g. ``critical group CAN``).
A rule that fails the decision (block, or a required rule missing, in a critical or supporting tier) carries a
`<failure>` whose type is its outcome; a rule whose target is missing and not required is `<skipped>`; every
other rule (pass, warn, and advisory outcomes) passes, its outcome and numbers in `<system-out>`, a warning
starting with ``WARN``. Characters XML 1.0 cannot hold (control characters of a task or variant name, reachable
through an imported task name) are written as ``\\xNN`` text, so the file is always well-formed. It validates against
the JUnit ("junit-10") schema that GitLab (`artifacts:reports:junit`), Jenkins (`junit` step) and the GitHub
Actions test reporters (dorny/test-reporter, mikepenz/action-junit-report) read (tests/gate/junit.xsd).
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from typing import Any

import pandas as pd

from captrack.analysis.verdicts import GATE_ALPHA
from captrack.gate.items import FlippedItem, ItemKey
from captrack.gate.margin_tests import POWER, variant_null_warn_share
from captrack.gate.outcomes import Cell, GateResult, RuleOutcome
from captrack.report.escape import md_code, md_row, md_text
from captrack.report.numbers import ci_text, excludes_zero, signed_change
from captrack.report.power_hint import HINT_HEADER, ci_detects, hint_text

__all__ = ["gate_json", "gate_junit", "gate_markdown", "outcome_line", "rule_flips"]

_MARK = {"pass": "pass", "warn": "WARN", "block": "BLOCK", "missing": "MISSING"}
# What XML 1.0 cannot hold: controls other than tab, newline and carriage return, lone surrogates, U+FFFE and U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml(text: str) -> str:
    """`text` with each character XML 1.0 cannot hold written as its code (``\\x01``, ``\\ud800``)."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", text)


def _cell_text(cell: Cell) -> str:
    if math.isnan(cell.change):
        return "no verdict"
    unit = "points" if cell.unit == "points" else cell.unit
    return (f"{signed_change(cell.change, excludes_zero(*cell.ci95))} {unit} {ci_text(*cell.ci95)} (90% CI {ci_text(*cell.ci90)}), "
            f"margin {cell.margin:g}, verdict {cell.verdict}")


def outcome_line(outcome: RuleOutcome) -> str:
    """One line of the console: ``sft critical group CAN: BLOCK: -6.0 points [...]; why``."""
    shown = [c for c in outcome.cells if not math.isnan(c.change)]
    numbers = "; ".join(f"{c.key}: {_cell_text(c)}" if len(outcome.cells) > 1 else _cell_text(c) for c in shown)
    numbers = f"{numbers}; " if numbers else ""
    return f"{outcome.variant} {outcome.rule.label}: {_MARK[outcome.outcome]}: {numbers}{outcome.reason}"


def gate_markdown(result: GateResult, transitions: pd.DataFrame | None = None, drift: pd.DataFrame | None = None,
                  items: Mapping[ItemKey, list[FlippedItem]] | None = None) -> str:
    """The gate as Markdown: the decision per variant, each rule's outcome, and the flips behind each rule that
    did not pass (items right under the base and wrong under the variant, and the other way), side by side, with
    the texts of the first items that got worse where the comparison carries them (`items`)."""
    lines = [f"# Release gate: {md_text(result.policy.source, table=False)}", "",
             md_row(["variant", "decision", "block", "missing", "warn", "pass"]), md_row(["---"] * 6)]
    for variant, decision in result.decisions.items():
        found = [o.outcome for o in result.for_variant(variant)]
        lines.append(md_row([md_text(variant), f"**{decision}**", *(str(found.count(k)) for k in ("block", "missing", "warn", "pass"))]))
    lines += ["", f"Exit status {result.exit_status}. " + _RULES_TEXT + (_STRICT_TEXT if result.policy.strict else _PER_CELL_TEXT)]
    for variant in result.decisions:
        lines += ["", f"## {md_text(variant, table=False)}: {result.decisions[variant]}", "",
                  md_row(["rule", "outcome", "change [95% CI]", "90% CI", "margin", "blocking MDE", HINT_HEADER, "why"]),
                  md_row(["---"] * 8)]
        for o in result.for_variant(variant):
            lines += _rule_rows(o, transitions)
        lines += ["", _null_warn_line(result, variant)]
        flips = [(o, flip) for o in result.for_variant(variant) for flip in rule_flips(o, transitions, drift)]
        lines += _flip_table(flips) + _item_tables(variant, flips, items or {})
    return "\n".join(lines) + "\n"


_RULES_TEXT = (f"Block: Holm's test over the variant's critical and supporting rules rejects 'not beyond the margin' "
               f"(Δ ≥ −margin) at a family-wise {100 * GATE_ALPHA:g}% per variant, so a block's 95% CI lies below "
               "−margin and a variant whose every rule sits exactly at its margin blocks at most "
               f"{100 * GATE_ALPHA:g}% of the time. Blocking MDE: the regression a rule blocks with 80% power when it is "
               "the only one beyond its margin (margin + (z of α/k + z of 80%) × its standard error, from its CI's width: "
               "its item count and observed discordance); a smaller regression beyond the margin usually warns. "
               "What these items detect: the change its verdict finds with 80% power, (z of 97.5% + z of 80%) × that "
               "standard error, and about how many items (n × (that change / margin)²) would detect the margin. "
               "Warn: a significant regression that is not a block, or a 90% CI reaching below −margin; pass: "
               "improved, or the 90% CI above −margin. Advisory rules never change the decision. ")
_STRICT_TEXT = (f"strict: true: a critical rule's warn fails the gate (exit 4) only when Holm's test rejects its "
                f"regression at a family-wise {100 * GATE_ALPHA:g}% (an unchanged variant fails at most "
                f"{100 * GATE_ALPHA:g}% of the time); other warnings are per cell and reported only.")
_PER_CELL_TEXT = ("A warn is per cell, not family-wise: an unchanged variant of many rules often warns (its expected "
                  "rate below each variant); with strict: true only family-wise regressions would exit 4.")


def _null_warn_line(result: GateResult, variant: str) -> str:
    """The chance that an unchanged variant of these rules' widths warns (per cell), and what the gate does with it."""
    cells = [c for o in result.for_variant(variant) if o.rule.tier == "critical" for c in o.cells]
    share = variant_null_warn_share(c.null_warn for c in cells)
    if not cells:
        return "No critical rule with a verdict: no warning can move this variant's decision."
    strict = (f"; this strict gate fails it only on a family-wise regression, at most {100 * GATE_ALPHA:g}% of the time"
              if result.policy.strict else "")
    return (f"An unchanged variant with these {len(cells)} critical cells' widths shows a per-cell warning with "
            f"probability ≈ {100 * share:.0f}% (normal approximation, cells independent){strict}.")


def _rule_rows(o: RuleOutcome, transitions: pd.DataFrame | None) -> list[str]:
    rows = []
    for i, c in enumerate(o.cells or (None,)):
        rule = md_text(o.rule.label) + (f" ({md_code(c.key, table=True)})" if c is not None and len(o.cells) > 1 else "")
        numbers = ([f"{signed_change(c.change, excludes_zero(*c.ci95))} {ci_text(*c.ci95)}", ci_text(*c.ci90), f"{c.margin:g}",
                    _mde_text(c.mde_block), md_text(hint_text(_items(o.variant, c.key, transitions), ci_detects(c.ci95),
                                                              c.margin, c.unit))]
                   if c is not None and not math.isnan(c.change) else ["–", "–", f"{o.rule.margin:g}", "–", "–"])
        mark = _MARK[c.outcome if c is not None else o.outcome]
        rows.append(md_row([rule if i == 0 else "", mark, *numbers, md_text(c.reason if c is not None else o.reason)]))
    return rows


def _items(variant: str, key: str, transitions: pd.DataFrame | None) -> float:
    """The paired items behind a cell (a task/metric, or a capability's or group's tasks, each once); NaN unknown."""
    if transitions is None or not len(transitions):
        return math.nan
    mine = transitions[transitions["variant"].astype(str) == variant]
    task, _, metric = key.partition("/")
    if metric:
        mine = mine[(mine["task"].astype(str) == task) & (mine["metric"].astype(str) == metric)]
    else:
        mine = mine[(mine["capability"].astype(str) == key) | (mine["group"].astype(str) == key)].drop_duplicates("task")
    return float(mine["n"].sum()) if len(mine) else math.nan


def _mde_text(mde: float) -> str:
    return "–" if math.isnan(mde) else f"−{mde:.1f}"


def rule_flips(o: RuleOutcome, transitions: pd.DataFrame | None, drift: pd.DataFrame | None) -> list[tuple[str, str, int, int, int]]:
    """(task, metric, items, worse, better) per task behind a rule that did not pass (none for a passing rule):
    worse counts the items right under the base and wrong under the variant, on the metric's better side."""
    if o.outcome == "pass" or not o.cells or transitions is None or not len(transitions):
        return []
    lower = set() if drift is None else {(str(r.task), str(r.metric)) for r in drift.itertuples(index=False)
                                         if str(r.variant) == o.variant and str(r.direction) == "lower"}
    mine = transitions[transitions["variant"].astype(str) == o.variant]
    mine = mine[mine[o.rule.kind].astype(str) == o.rule.target].drop_duplicates(["task", "metric"])
    out = []
    for r in mine.itertuples(index=False):
        lost, gained = (r.n_01, r.n_10) if (str(r.task), str(r.metric)) in lower else (r.n_10, r.n_01)
        out.append((str(r.task), str(r.metric), int(r.n), int(lost), int(gained)))
    return out


def _flip_table(flips: list[tuple[RuleOutcome, tuple[str, str, int, int, int]]]) -> list[str]:
    if not flips:
        return []
    return ["", "Flipped items behind the rules that did not pass (base → this variant; worse: right under the base, "
            "wrong under the variant, on the metric's better side):", "",
            md_row(["rule", "task", "metric", "items", "worse", "better"]), md_row(["---"] * 6),
            *(md_row([md_text(o.rule.label), md_code(task, table=True), md_code(metric, table=True), str(n), str(worse),
                      str(better)]) for o, (task, metric, n, worse, better) in flips)]


def _item_tables(variant: str, flips: list[tuple[RuleOutcome, tuple[str, str, int, int, int]]],
                 items: Mapping[ItemKey, list[FlippedItem]]) -> list[str]:
    lines: list[str] = []
    for task, metric in dict.fromkeys((task, metric) for _, (task, metric, *_rest) in flips):
        shown = items.get((variant, task, metric), [])
        if not shown:
            continue
        lines += ["", f"Items that got worse on {md_code(task)} / {md_code(metric)} (the first {len(shown)}):", "",
                  md_row(["doc", "question", "gold", "base answer", f"{md_text(variant)} answer"]), md_row(["---"] * 5)]
        lines += [md_row([str(i.doc_id), md_text(i.question), md_text(i.gold), md_text(i.base_answer),
                          md_text(i.variant_answer)]) for i in shown]
    return lines


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 6)


def _cell_json(cell: Cell) -> dict[str, Any]:
    return {"key": cell.key, "unit": cell.unit, "change": _number(cell.change),
            "ci95": [_number(x) for x in cell.ci95], "ci90": [_number(x) for x in cell.ci90],
            "verdict": cell.verdict, "p_regressed": _number(cell.p_regressed), "margin": cell.margin,
            "holm_rejects": cell.holm_rejects, "p_beyond_margin": _number(cell.p_beyond),
            "holm_rejects_beyond_margin": cell.beyond_rejects, "blocking_mde": _number(cell.mde_block),
            "null_warn_share": _number(cell.null_warn), "outcome": cell.outcome, "reason": cell.reason}


def gate_json(result: GateResult) -> str:
    """The gate as JSON: policy, exit status, decision per variant, and each (variant, rule) outcome with its cells."""
    rules = [{"variant": o.variant, "rule": {"index": o.rule.index, "kind": o.rule.kind, "target": o.rule.target,
                                             "metric": o.rule.metric, "tier": o.rule.tier, "margin": o.rule.margin,
                                             "relative": o.rule.relative, "required": o.rule.required},
              "outcome": o.outcome, "reason": o.reason, "counts": o.counts, "cells": [_cell_json(c) for c in o.cells]}
             for o in result.outcomes]
    return json.dumps({"policy": result.policy.source, "exit_status": result.exit_status,
                       "decisions": result.decisions, "family_wise_alpha": GATE_ALPHA, "strict": result.policy.strict,
                       "blocking_mde_power": POWER, "rules": rules}, indent=2) + "\n"


def gate_junit(result: GateResult) -> str:
    """The gate as JUnit XML (see the module docstring): a test suite per variant, a test case per rule."""
    root = ET.Element("testsuites", name="captrack gate")
    total = failed = 0
    for variant in result.decisions:
        outcomes = result.for_variant(variant)
        suite = ET.SubElement(root, "testsuite", name=_xml(f"captrack gate: {variant}"))
        failures = skipped = 0
        for o in outcomes:
            case = ET.SubElement(suite, "testcase", name=_xml(o.rule.label), classname=_xml(f"captrack.gate.{variant}"))
            if o.counts and (o.outcome == "block" or (o.outcome == "missing" and o.rule.required)):
                ET.SubElement(case, "failure", type=o.outcome, message=_xml(o.reason)).text = _xml(outcome_line(o))
                failures += 1
            elif o.outcome == "missing" and not o.rule.required:
                ET.SubElement(case, "skipped", message=_xml(o.reason))
                skipped += 1
            ET.SubElement(case, "system-out").text = _xml(outcome_line(o))
        suite.set("tests", str(len(outcomes)))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", str(skipped))
        total, failed = total + len(outcomes), failed + failures
    root.set("tests", str(total))
    root.set("failures", str(failed))
    root.set("errors", "0")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
