"""A gate policy is read strictly: every mistake is one error naming the key (or rule) and what is allowed there."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from captrack.errors import InputError
from captrack.gate.outcomes import evaluate
from captrack.gate.policy import load_policy

# a comparison of one variant: capability C1, group CAN, and two tasks (one outside the taxonomy, one neutral metric)
CAPABILITIES = pd.DataFrame({"variant": ["sft", "sft"], "level": ["capability", "group"], "key": ["C1", "CAN"],
                             "oriented_change": [-1.0, -1.0], "change_ci_low": [-2.0, -2.0], "change_ci_high": [0.5, 0.5],
                             "change_ci90_low": [-1.8, -1.8], "change_ci90_high": [0.2, 0.2],
                             "verdict": ["equivalent", "equivalent"], "p_value": [0.2, 0.2]})
DRIFT = pd.DataFrame({"variant": ["sft", "sft", "sft"], "task": ["captrack_probe_c1_facts", "acme_qa", "acme_qa"],
                      "metric": ["acc", "acc", "words"], "capability": ["C1", "", ""],
                      "direction": ["higher", "higher", "neutral"], "base_value": [0.1, 0.5, 40.0],
                      "change_unit": ["points", "points", "% of base"], "oriented_change": [-1.0, -1.0, 3.0],
                      "change_ci_low": [-2.0, -2.0, 1.0], "change_ci_high": [0.5, 0.5, 5.0],
                      "change_ci90_low": [-1.8, -1.8, 1.2], "change_ci90_high": [0.2, 0.2, 4.8],
                      "verdict": ["equivalent", "equivalent", "changed"], "p_value": [0.2, 0.2, 0.01]})


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    return load_policy(path)


@pytest.mark.parametrize(("text", "message"), [
    ("rules: [{group: CAN, tier: critical}]\nmargins: 5\n", "key 'margins' is not allowed"),
    ("rules: [{group: CAN, tier: critical, teir: advisory}]\n", "key 'rules[0].teir' is not allowed"),
    ("rules: [{group: CAN, tier: blocker}]\n", "key 'rules[0].tier' is 'blocker'"),
    ("rules: [{group: CAN, tier: critical, margin: 0}]\n", "key 'rules[0].margin' is 0"),
    ("rules: [{group: CAN, tier: critical, margin: '5'}]\n", "key 'rules[0].margin'"),
    ("rules: [{group: CAN, tier: critical, required: yes please}]\n", "key 'rules[0].required'"),
    ("rules: [{task: t, tier: critical, relative: 1.5}]\n", "key 'rules[0].relative' is 1.5"),
    ("version: 2\nrules: [{group: CAN, tier: critical}]\n", "key 'version' is 2"),
    ("rules: []\n", "key 'rules'"),
    ("margin: 5\n", "key 'rules' is missing"),
    ("rules: [{tier: critical}]\n", "rules[0]: a rule names exactly one of 'capability', 'group' or 'task' (found none)"),
    ("rules: [{group: CAN, task: t, tier: critical}]\n", "(found 'group', 'task')"),
    ("rules: [{capability: C1, metric: acc, tier: critical}]\n", "rules[0]: key 'metric' applies to task rules only"),
    ("rules: [{group: CAN, relative: 0.2, tier: critical}]\n", "rules[0]: key 'relative' applies to task rules only"),
    ("rules: [{group: CAN, tier: critical}, {group: CAN, tier: advisory}]\n", "rules[1]: group 'CAN' already has a rule (rules[0])"),
    ("- group: CAN\n", "gate policy must be a mapping"),
    ("rules: [{group: CAN, tier: critical}\n", "not a YAML gate policy"),
])
def test_a_malformed_policy_is_one_error_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _load(tmp_path, text)
    assert message in str(caught.value) and str(tmp_path / "policy.yaml") in str(caught.value)


@pytest.mark.parametrize(("rule", "message"), [
    ("{capability: C7, tier: critical}", "rules[0]: unknown capability 'C7'"),
    ("{capability: c1, tier: critical}", "did you mean 'C1'?"),
    ("{group: CANN, tier: critical}", "unknown group 'CANN': this comparison has none by that name; did you mean 'CAN'?"),
    ("{task: acme_q, tier: critical}", "unknown task 'acme_q'"),
    ("{task: acme_qa, metric: f1, tier: critical}", "key 'metric': task 'acme_qa' has no metric 'f1' in this comparison; it has acc, words"),
    ("{task: acme_qa, metric: words, tier: critical}", "acme_qa/words has no better side (neutral)"),
])
def test_names_are_checked_against_the_comparison(tmp_path: Path, rule: str, message: str) -> None:
    policy = _load(tmp_path, f"rules: [{rule}]\n")
    with pytest.raises(InputError) as caught:
        evaluate(policy, CAPABILITIES, DRIFT)  # type: ignore[arg-type]
    assert message in str(caught.value)


def test_a_required_name_the_comparison_lacks_is_missing_not_an_error(tmp_path: Path) -> None:
    policy = _load(tmp_path, "rules: [{task: acme_q, tier: supporting, required: true}, {task: acme_qa, tier: critical}]\n")
    result = evaluate(policy, CAPABILITIES, DRIFT)  # type: ignore[arg-type]
    assert [(o.rule.target, o.outcome) for o in result.outcomes] == [("acme_q", "missing"), ("acme_qa", "pass")]
    assert result.decisions == {"sft": "fail"} and result.exit_status == 3
    # a task rule gates the task's oriented metrics only: acme_qa/words (neutral) is left out
    assert [c.key for c in result.outcomes[1].cells] == ["acme_qa/acc"]


def test_defaults_and_the_relative_guard(tmp_path: Path) -> None:
    policy = _load(tmp_path, "margin: 3\nrelative: 0.05\nrules:\n  - {task: captrack_probe_c1_facts, tier: critical}\n"
                             "  - {task: acme_qa, tier: critical, relative: 0.5}\n  - {capability: C1, tier: advisory, margin: 2}\n")
    result = evaluate(policy, CAPABILITIES, DRIFT)  # type: ignore[arg-type]
    margins = {o.rule.target: o.cells[0].margin for o in result.outcomes}
    # base 10% x 0.05 = 0.5 points < 3; base 50% x 0.5 = 25 > 3 (the margin stays 3); a capability rule: its own 2
    assert margins == {"captrack_probe_c1_facts": pytest.approx(0.5), "acme_qa": 3.0, "C1": 2.0}
    outcome = {o.rule.target: o.outcome for o in result.outcomes}
    # the same change, 90% CI [-1.8, +0.2]: below -0.5 -> warn; above -3 -> pass
    assert outcome == {"captrack_probe_c1_facts": "warn", "acme_qa": "pass", "C1": "pass"}
