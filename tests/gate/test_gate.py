"""A release gate with a policy file: outcomes and decisions on runs built to have them, on the demo's
committed board, and its JUnit XML checked against the JUnit schema.

The schema is tests/gate/junit.xsd, the JUnit ("junit-10") layout GitLab, Jenkins and the GitHub Actions JUnit
reporters read, written for these tests; tests/gate/conftest.py checks every gate-junit.xml a gate test writes.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from fakeruns import FakeTask, write_run
from gate_junit_schema import validated_junit
from lxml import etree

from captrack.cli import main
from captrack.gate import GATE_EXIT, WARN_EXIT
from captrack.gate.cli import apply_policy, read_tables
from captrack.gate.outcomes import evaluate
from captrack.gate.policy import load_policy

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "leaderboards" / "demo"
FACTS, LOGIC, CONSTRAINTS = "captrack_probe_c1_facts", "captrack_probe_c2_logic", "captrack_probe_h1_constraints"
PRIVATE = "acme_private_qa"  # an lm-eval task of the user's, outside captrack's taxonomy


def _pair(n11: int, n10: int, n01: int, n00: int) -> tuple[list[int], list[int]]:
    """Base and variant 0/1 values with exactly these transition counts."""
    return [1] * (n11 + n10) + [0] * (n01 + n00), [1] * n11 + [0] * n10 + [1] * n01 + [0] * n00


# (task, metric, transition counts (n11, n10, n01, n00)): the change is 100 (n01 - n10) / n points
CELLS = [
    (FACTS, "acc", (1300, 20, 20, 660)),  # 0.0 points on 2,000 items: equivalent at ±5 (C1)
    (LOGIC, "acc", (200, 70, 5, 125)),  # -16.25 points on 400 items (Wald SE about 2.0 points): far beyond -5 (C2)
    (CONSTRAINTS, "pass_all", (3, 1, 1, 1)),  # 6 items: inconclusive (H1)
    (PRIVATE, "acc", (150, 60, 2, 88)),  # -19.3 points on 300 items, outside the taxonomy
]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gate")
    pairs = {task: _pair(*counts) for task, _, counts in CELLS}
    write_run(root / "base", "base", [FakeTask(task, {metric: pairs[task][0]}) for task, metric, _ in CELLS])
    write_run(root / "sft", "sft", [FakeTask(task, {metric: pairs[task][1]}) for task, metric, _ in CELLS])
    assert main(["compare", "--base", str(root / "base"), "--variant", f"sft={root / 'sft'}:SFT",
                 "--out", str(root / "out"), "--bootstrap", "0"]) == 0
    return root


def _policy(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _outcomes(policy: Path, folder: Path) -> tuple[dict[str, str], int, dict[str, str]]:
    capabilities, drift, _ = read_tables(folder)
    result = evaluate(load_policy(policy), capabilities, drift)
    return {o.rule.label: o.outcome for o in result.outcomes}, result.exit_status, result.decisions


def test_a_task_outside_the_taxonomy_that_regressed_blocks(compared: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, "p.yaml", f"rules:\n  - {{capability: C1, tier: critical}}\n"
                                         f"  - {{task: {PRIVATE}, tier: supporting}}\n")
    outcomes, status, decisions = _outcomes(policy, compared / "out")
    assert outcomes == {"critical capability C1": "pass", f"supporting task {PRIVATE}": "block"}
    assert decisions == {"sft": "fail"} and status == GATE_EXIT
    drift = read_tables(compared / "out")[1].set_index("task")
    assert drift.loc[PRIVATE, "oriented_change"] == pytest.approx(100 * (2 - 60) / 300)
    assert drift.loc[PRIVATE, "change_ci_high"] < -5 and str(drift.loc[PRIVATE, "capability"]) in ("", "nan")


def test_a_missing_required_task_fails_and_one_not_required_is_only_noted(compared: Path, tmp_path: Path) -> None:
    required = _policy(tmp_path, "r.yaml", "rules:\n  - {capability: C1, tier: critical}\n"
                                           "  - {task: captrack_probe_w1_choice, tier: supporting, required: true}\n")
    outcomes, status, decisions = _outcomes(required, compared / "out")
    assert outcomes["supporting task captrack_probe_w1_choice"] == "missing"
    assert decisions == {"sft": "fail"} and status == GATE_EXIT
    optional = _policy(tmp_path, "o.yaml", "rules:\n  - {capability: C1, tier: critical}\n"
                                           "  - {group: WILL, tier: supporting}\n")  # no WILL task was run
    outcomes, status, decisions = _outcomes(optional, compared / "out")
    assert outcomes["supporting group WILL"] == "missing" and decisions == {"sft": "pass"} and status == 0


def test_tiers_combine_into_the_decision(compared: Path, tmp_path: Path) -> None:
    # LOGIC (-16.25 points) blocks in every tier; only an advisory block leaves the decision alone
    for tier, decision, status in (("critical", "fail", GATE_EXIT), ("supporting", "fail", GATE_EXIT),
                                   ("advisory", "pass", 0)):
        policy = _policy(tmp_path, f"{tier}.yaml", f"rules:\n  - {{task: {LOGIC}, tier: {tier}}}\n"
                                                   "  - {capability: C1, tier: critical}\n")
        outcomes, found, decisions = _outcomes(policy, compared / "out")
        assert outcomes[f"{tier} task {LOGIC}"] == "block" and (decisions["sft"], found) == (decision, status), tier
    # H1 (6 items) is inconclusive: a critical warn makes the decision warn (exit 0); under strict: true, where a
    # warn exits 4, only a family-wise regression counts, so this per-cell warn is reported and the decision passes
    for strict, decision in (("false", "warn"), ("true", "pass")):
        policy = _policy(tmp_path, "w.yaml", f"strict: {strict}\nrules:\n  - {{capability: H1, tier: critical}}\n"
                                             "  - {capability: C1, tier: critical}\n")
        outcomes, found, decisions = _outcomes(policy, compared / "out")
        assert outcomes["critical capability H1"] == "warn" and decisions == {"sft": decision} and found == 0
    # C2 (-16.25 points) inside a margin of 25: a regression Holm rejects, so a strict gate exits 4
    policy = _policy(tmp_path, "f.yaml", "strict: true\nrules:\n  - {capability: C2, tier: critical, margin: 25}\n"
                                         "  - {capability: H1, tier: critical}\n")
    outcomes, found, decisions = _outcomes(policy, compared / "out")
    assert outcomes["critical capability C2"] == "warn" and decisions == {"sft": "warn"} and found == WARN_EXIT
    # a supporting warn is reported but leaves the decision at pass
    policy = _policy(tmp_path, "s.yaml", "strict: true\nrules:\n  - {capability: H1, tier: supporting}\n")
    assert _outcomes(policy, compared / "out")[1:] == (0, {"sft": "pass"})


def test_the_margin_splits_warn_from_block(compared: Path, tmp_path: Path) -> None:
    # C2's change is -16.25 points with a 95% CI of about [-20, -12]: a block at margin 5, a warn at margin 25
    for margin, outcome in ((5, "block"), (25, "warn")):
        policy = _policy(tmp_path, "m.yaml", f"rules:\n  - {{capability: C2, tier: critical, margin: {margin}}}\n")
        assert _outcomes(policy, compared / "out")[0] == {"critical capability C2": outcome}, margin
    # the relative guard: base accuracy 270/400 = 67.5%, x 0.1 = 6.75 points < 25, and the whole CI lies below -6.75
    policy = _policy(tmp_path, "g.yaml", f"rules:\n  - {{task: {LOGIC}, tier: critical, margin: 25, relative: 0.1}}\n")
    assert _outcomes(policy, compared / "out")[0] == {f"critical task {LOGIC}": "block"}


def _validated(xml: bytes) -> etree._ElementTree:
    return validated_junit(xml)


def test_compare_with_gate_writes_markdown_json_and_junit_that_validates(compared: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, "p.yaml", "rules:\n  - {group: CAN, tier: critical}\n  - {group: HOW, tier: supporting}\n"
                                         f"  - {{task: {PRIVATE}, tier: advisory}}\n"
                                         "  - {task: captrack_probe_w1_choice, tier: critical, required: true}\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["compare", "--base", str(compared / "base"), "--variant", f"sft={compared / 'sft'}:SFT",
                       "--out", str(tmp_path / "out"), "--bootstrap", "0", "--gate", str(policy),
                       "--gate-report", str(tmp_path / "gate")])
    assert status == GATE_EXIT, err.getvalue()
    assert "sft: fail (exit 3)" in err.getvalue()
    document = _validated((tmp_path / "gate" / "gate-junit.xml").read_bytes())
    suites = document.getroot().findall("testsuite")
    assert [s.get("name") for s in suites] == ["captrack gate: sft"]
    cases = suites[0].findall("testcase")
    assert [c.get("name") for c in cases] == ["critical group CAN", "supporting group HOW", f"advisory task {PRIVATE}",
                                              "critical task captrack_probe_w1_choice"]  # one test case per rule
    failed = {c.get("name"): c.find("failure").get("type") for c in cases if c.find("failure") is not None}
    assert failed["critical task captrack_probe_w1_choice"] == "missing"
    assert f"advisory task {PRIVATE}" not in failed  # an advisory block never fails
    assert "BLOCK" in next(c for c in cases if c.get("name") == f"advisory task {PRIVATE}").find("system-out").text
    assert suites[0].get("failures") == str(len(failed)) and suites[0].get("tests") == "4"
    report = json.loads((tmp_path / "gate" / "gate.json").read_text())
    assert report["exit_status"] == GATE_EXIT and report["decisions"] == {"sft": "fail"} and len(report["rules"]) == 4
    markdown = (tmp_path / "gate" / "gate.md").read_text()
    assert "| sft | **fail** |" in markdown
    assert f"| advisory task {PRIVATE} | `{PRIVATE}` | `acc` | 300 | 60 | 2 |" in markdown  # worse 60, better 2
    # and the first items that got worse, side by side: base right (items 150.. of the n10 block), variant wrong
    assert f"Items that got worse on `{PRIVATE}` / `acc` (the first 5):" in markdown
    assert f"| 150 | {PRIVATE} question 150 |" in markdown and f"| 149 | {PRIVATE} question 149 |" not in markdown


def test_the_gate_command_reads_a_comparison_folder(compared: Path, tmp_path: Path) -> None:
    policy = _policy(tmp_path, "p.yaml", f"rules:\n  - {{task: {PRIVATE}, tier: critical}}\n")
    assert main(["gate", str(policy), str(compared / "out"), "--report", str(tmp_path / "r")]) == GATE_EXIT
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["gate-junit.xml", "gate.json", "gate.md"]
    assert main(["gate", str(policy), str(tmp_path / "nowhere")]) == 1
    # a bad policy, or a report without a policy, is refused before the comparison starts: nothing is written
    bad = _policy(tmp_path, "bad.yaml", "rules: [{group: CAN, tier: blocker}]\n")
    args = ["compare", "--base", str(compared / "base"), "--variant", f"sft={compared / 'sft'}", "--out", str(tmp_path / "never")]
    assert main([*args, "--gate", str(bad)]) == 1 and main([*args, "--gate-report", str(tmp_path / "g")]) == 1
    assert not (tmp_path / "never").exists() and not (tmp_path / "g").exists()
    # a report folder inside the comparison's own folder would make its next `compare --out` refuse: refused here
    assert main(["gate", str(policy), str(compared / "out"), "--report", str(compared / "out" / "gate")]) == 1
    assert not (compared / "out" / "gate").exists()
    scores = tmp_path / "scores.csv"
    scores.write_text("model,task,metric,value,base\nb,captrack_probe_c1_facts,acc,0.5,\nv,captrack_probe_c1_facts,acc,0.4,b\n")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["compare", "--scores", str(scores), "--out", str(tmp_path / "s"), "--gate", str(policy)]) == 1
    assert "--gate needs per-item results" in err.getvalue()
    assert main(["compare", "--scores", str(scores), "--out", str(tmp_path / "s")]) == 0
    no_items = _policy(tmp_path, "n.yaml", "rules:\n  - {capability: C1, tier: critical, required: true}\n")
    outcomes, status, decisions = _outcomes(no_items, tmp_path / "s")  # aggregate scores: no CI, no verdict
    assert outcomes == {"critical capability C1": "missing"} and decisions == {"v": "fail"} and status == GATE_EXIT


# -- the demo's committed board: critical CAN, supporting HOW, advisory WILL, margin 5 ------------------------------

DEMO_POLICY = "version: 1\nmargin: 5\nrules:\n  - {group: CAN, tier: critical}\n  - {group: HOW, tier: supporting}\n" \
              "  - {group: WILL, tier: advisory}\n"


@pytest.mark.skipif(not (DEMO / "capabilities.csv").is_file(), reason="the demo board is not in this checkout")
def test_the_demo_board_passes_every_cell(tmp_path: Path) -> None:
    # Hand-computed from leaderboards/demo/capabilities.csv (group rows: change in points, 95% CI; 90% CI), the board
    # make demo wrote at ff796c7 (stratified capability score interval):
    #   sft CAN +6.8 [+3.40, +10.87] improved -> pass; HOW -0.5, 90% CI [-1.76, +0.69] above -5 -> pass;
    #       WILL -1.75, 90% CI [-4.01, +0.49] above -5 -> pass (its 95% CI [-4.52, +0.99] holds 0: not a regression)
    #   dpo CAN +1.5, 90% CI [+0.01, +3.00]; HOW, WILL 90% CIs inside [-2.0, +1.0] -> pass
    #   rl  CAN, HOW, WILL: every 90% CI inside [-1.6, +1.3] -> pass
    # Decision: pass for all three variants; exit 0.
    policy = _policy(tmp_path, "demo.yaml", DEMO_POLICY)
    _, status, decisions = _outcomes(policy, DEMO)
    assert decisions == {"sft": "pass", "dpo": "pass", "rl": "pass"} and status == 0
    result = evaluate(load_policy(policy), *read_tables(DEMO)[:2])
    found = {(o.variant, o.rule.target): o.outcome for o in result.outcomes}
    assert found == {(v, g): "pass" for v in ("sft", "dpo", "rl") for g in ("CAN", "HOW", "WILL")}
    assert {(o.variant, o.rule.target) for o in result.outcomes if o.reason == "improved"} == {("sft", "CAN")}
    assert main(["gate", str(policy), str(DEMO)]) == 0


@pytest.mark.skipif(not (DEMO / "capabilities.csv").is_file(), reason="the demo board is not in this checkout")
def test_on_the_demo_a_narrow_margin_warns_where_the_ci_reaches_past_it(tmp_path: Path) -> None:
    # WILL critical at margin 0.4. No WILL cell is a regression (every 95% CI holds 0), but every 90% CI reaches
    # below -0.4: sft [-3.84, +0.83], dpo [-0.93, +1.96], rl [-1.89, +1.12] -> warn, inconclusive. The one-sided
    # p of "not beyond -0.4" is far from any threshold (sft 0.225, dpo 0.830, rl 0.510), so nothing is rejected.
    # strict: true fails only on a family-wise regression -> every decision passes (exit 0); strict: false warns.
    # (Holm's family on a significant regression inside a narrow margin: tests/gate/test_gate_margin_family.py.)
    policy = _policy(tmp_path, "narrow.yaml", "strict: true\nrules:\n  - {group: CAN, tier: critical}\n"
                                              "  - {group: HOW, tier: supporting}\n"
                                              "  - {group: WILL, tier: critical, margin: 0.4}\n")
    capabilities, drift, transitions = read_tables(DEMO)
    result = evaluate(load_policy(policy), capabilities, drift)
    will = {o.variant: o for o in result.outcomes if o.rule.target == "WILL"}
    assert {v: o.outcome for v, o in will.items()} == {"sft": "warn", "dpo": "warn", "rl": "warn"}
    assert all(o.reason == "inconclusive: the 90% CI reaches below −0.4" for o in will.values())
    for variant, (low, high) in {"sft": (0.21, 0.23), "dpo": (0.82, 0.84), "rl": (0.50, 0.52)}.items():
        cell = will[variant].cells[0]
        assert cell.ci95[0] < 0 < cell.ci95[1] and not cell.holm_rejects and not cell.beyond_rejects
        assert low < cell.p_beyond < high
    assert result.decisions == {"sft": "pass", "dpo": "pass", "rl": "pass"} and result.exit_status == 0
    loose = evaluate(load_policy(_policy(tmp_path, "loose.yaml", policy.read_text().replace("strict: true", "strict: false"))),
                     capabilities, drift)
    assert loose.decisions == {"sft": "warn", "dpo": "warn", "rl": "warn"} and loose.exit_status == 0
    out = io.StringIO()
    from rich.console import Console

    assert apply_policy(Console(file=out), str(policy), capabilities, drift, transitions, str(tmp_path / "r")) == 0
    _validated((tmp_path / "r" / "gate-junit.xml").read_bytes())
    assert "this strict gate fails it only on a family-wise regression" in (tmp_path / "r" / "gate.md").read_text()


# -- captrack run --gate: the pipeline's own comparison, gated in the same process --------------------------------

QUESTIONS = [{"question_id": q, "question": f"question {q}?", "options": ["w", "x", "y", "z", "v", "u"],
              "answer": "ABCDEF"[q % 6], "answer_index": q % 6, "cot_content": "", "category": "law", "src": "test"}
             for q in range(40)]


def _experiment(folder: Path, tuned_correct: bool) -> Path:
    """An experiment of imported MMLU-Pro generations (no model runs): the base answers all 40 right."""
    (folder / "data" / "mmlu_pro").mkdir(parents=True, exist_ok=True)
    (folder / "data" / "mmlu_pro" / "test.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    for name, correct in (("right", True), ("tuned", tuned_correct)):
        items = [{**q, "generated_text": f"Answer: {q['answer'] if correct else 'J'}"} for q in QUESTIONS]
        (folder / f"{name}.json").write_text(json.dumps(items), encoding="utf-8")
    path = folder / "exp.yaml"
    path.write_text(f'name: exp\nworkdir: work\nleaderboard: board\ndata: {{sources: "{folder}/data", configs: [mmlu_pro.full]}}\n'
                    f'base: [{{name: base, import: {{format: mmlu-pro, path: "{folder}/right.json"}}}}]\n'
                    f'variants:\n  - {{name: tuned, base: base, algorithm: SFT, import: {{format: mmlu-pro, path: "{folder}/tuned.json"}}}}\n')
    return path


def test_run_with_gate_decides_on_the_comparison_it_computed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CAPTRACK_DATA_DIR", raising=False)
    policy = _policy(tmp_path, "p.yaml", "rules:\n  - {task: captrack_mmlu_pro_full, tier: critical, required: true}\n")
    bad = _policy(tmp_path, "bad.yaml", "rules:\n  - {task: captrack_mmlu_pro_full, tier: must}\n")
    experiment = _experiment(tmp_path / "wrong", tuned_correct=False)
    assert main(["run", str(experiment), "--gate", str(bad)]) == 1  # refused before anything runs
    assert not (tmp_path / "wrong" / "work").exists()
    assert main(["run", str(experiment), "--gate", str(policy), "--gate-report", str(tmp_path / "r")]) == GATE_EXIT
    assert json.loads((tmp_path / "r" / "gate.json").read_text())["decisions"] == {"tuned": "fail"}  # -100 points
    markdown = (tmp_path / "r" / "gate.md").read_text()
    assert "| `captrack_mmlu_pro_full` | `acc` | 40 | 40 | 0 |" in markdown
    assert "Question: question 0?" in markdown  # the texts the run's board read: gold, base answer, candidate answer
    assert "| A. w | Answer: A | Answer: J |" in markdown
    assert main(["run", str(_experiment(tmp_path / "right", tuned_correct=True)), "--gate", str(policy)]) == 0
