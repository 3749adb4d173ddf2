"""The gate never passes a folder it cannot read, writes JUnit XML that stays well-formed whatever the names hold,
checks its report folder before it decides, and says why a rule has no verdict (issue 51).

tests/gate/old_folders/ holds the gate's tables of comparison folders written by older captracks, each made by
`captrack compare` at that commit (in a git worktree) from the runs of tests/gate/test_gate.py's CELLS
(base 2,000 + 400 + 6 + 300 items; sft loses 16 points on C2 and 19 on acme_private_qa):

- 324e8e0-parent: captrack at 324e8e0^ (2026-11-27), with every column today's gate reads: read as today's;
- d31ca71-parent: captrack at d31ca71^ (2026-11-25..27), verdicts without p-values. Its columns are exactly those of
  the golden tables at 324e8e0^ (tests/analysis/golden/*.csv there): refused, naming when such folders were written;
- c1cc661-parent: captrack at c1cc661^ (before 2026-11-25), no verdict columns: refused likewise.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from fakeruns import FakeTask, write_run
from gate_junit_schema import validated_junit

from captrack.cli import main
from captrack.gate import GATE_EXIT

OLD = Path(__file__).with_name("old_folders")
POLICY = "rules:\n  - {capability: C2, tier: critical}\n  - {capability: C1, tier: critical}\n"
# The golden tables' headers at 324e8e0^ (`git show 324e8e0^:tests/analysis/golden/drift.csv | head -1`, ...)
GOLDEN_AT_324E8E0_PARENT = {
    "drift.csv": "variant,algorithm,task,metric,capability,group,direction,base_value,variant_value,rel_drift_pct,"
                 "oriented_drift_pct,ci_low,ci_high,change_unit,oriented_change,change_ci_low,change_ci_high,"
                 "change_ci90_low,change_ci90_high,verdict",
    "capabilities.csv": "variant,algorithm,level,key,mean_rel_drift_pct,std_rel_drift_pct,ci_low,ci_high,forgetting,"
                        "backward_transfer,n_metrics,mde_pct,n_items,base_value,variant_value,oriented_drift_pct,"
                        "oriented_change,change_ci_low,change_ci_high,change_ci90_low,change_ci90_high,verdict",
}


def _gate(tmp_path: Path, capsys: pytest.CaptureFixture[str], folder: Path, policy: str = POLICY,
          *extra: str) -> tuple[int, str]:
    path = tmp_path / "policy.yaml"
    path.write_text(policy, encoding="utf-8")
    status = main(["gate", str(path), str(folder), *extra])
    return status, capsys.readouterr().err


def _copy(tmp_path: Path, name: str) -> Path:
    folder = tmp_path / name
    shutil.copytree(OLD / name, folder)
    return folder


def test_a_folder_written_before_p_values_is_refused_naming_the_captrack_that_wrote_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = OLD / "d31ca71-parent"
    for name, header in GOLDEN_AT_324E8E0_PARENT.items():  # the exact column set of 324e8e0^'s golden tables
        assert (folder / name).read_text().splitlines()[0] == header
    status, err = _gate(tmp_path, capsys, folder)
    assert status == 1, err  # on 999703f: C2 (-16 points, regressed) became warn and the exit was 0
    assert "no column 'p_value'" in err and "older captrack" in err and "2026-11-27" in err and "d31ca71" in err
    assert "nothing was decided" in err and "(exit" not in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_folder_written_before_verdicts_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _gate(tmp_path, capsys, OLD / "c1cc661-parent")
    assert status == 1, err  # on 999703f: every rule missing, warn, exit 0
    assert "no column 'oriented_change'" in err and "'verdict'" in err and "2026-11-25" in err and "(exit" not in err


def test_a_folder_of_324e8e0_parent_is_read_as_todays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = POLICY + "  - {capability: H1, tier: supporting}\n  - {task: acme_private_qa, tier: critical}\n"
    status, err = _gate(tmp_path, capsys, OLD / "324e8e0-parent", policy, "--report", str(tmp_path / "r"))
    assert status == GATE_EXIT, err
    assert "block: sft critical capability C2: BLOCK: -16.2 points [-20.5, -12.5]" in err
    assert "block: sft critical task acme_private_qa: BLOCK" in err and "warn: sft supporting capability H1" in err
    assert "sft: fail (exit 3)" in err
    assert "| `captrack_probe_c2_logic` | `acc` | 400 | 70 | 5 |" in (tmp_path / "r" / "gate.md").read_text()


@pytest.mark.parametrize(("table", "old", "new", "said"), [
    ("capabilities.csv", ",-13.0684554,regressed,", ",-13.0684554,REGRESSED,",
     "line 3, column 'verdict': 'REGRESSED' is not one of"),
    ("drift.csv", ",6.828847854e-14,", ",<1e-10,", "line 4, column 'p_value': '<1e-10' is not a number"),
    ("drift.csv", ",6.828847854e-14,", ",0.5%,", "column 'p_value': '0.5%' is not a number"),
    ("capabilities.csv", ",6.828847854e-14,", ",2.5,", "column 'p_value': '2.5' is not a p-value in [0, 1]"),
    ("capabilities.csv", ",-20.46574222,", ",minus twenty,", "column 'change_ci_low': 'minus twenty' is not a number"),
    ("transitions.csv", "400,200,70,5,125", "400,200,seventy,5,125", "column 'n_10': 'seventy' is not a count"),
], ids=["verdict-upper-case", "p-value-as-text", "p-value-percent", "p-value-past-1", "ci-text", "count-text"])
def test_a_value_the_gate_cannot_parse_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], table: str,
                                                 old: str, new: str, said: str) -> None:
    folder = _copy(tmp_path, "324e8e0-parent")
    text = (folder / table).read_text()
    assert text.count(old) == 1, old
    (folder / table).write_text(text.replace(old, new))
    status, err = _gate(tmp_path, capsys, folder)
    assert status == 1, err  # on 999703f: C2 missing (or a traceback), exit 0
    assert str(folder / table) in err and said in err and "nothing was decided" in err and "(exit" not in err


def test_a_table_without_a_column_the_gate_reads_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tmp_path, "324e8e0-parent")
    for name in ("capabilities.csv", "drift.csv"):
        pd.read_csv(folder / name).drop(columns=["p_value"]).to_csv(folder / name, index=False)
    status, err = _gate(tmp_path, capsys, folder)
    assert status == 1 and "no column 'p_value'" in err and "(exit" not in err, err


# -- JUnit XML with names XML 1.0 cannot hold -------------------------------------------------------------------

def test_control_characters_in_names_leave_the_junit_report_well_formed_and_valid(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tmp_path, "324e8e0-parent")
    for name in ("capabilities.csv", "drift.csv", "transitions.csv"):  # an imported task and variant with controls
        text = (folder / name).read_text().replace("acme_private_qa", "acme\x0bqa\x1b[31m").replace("\nsft,", "\ns\x01ft,")
        (folder / name).write_text(text)
    policy = POLICY + '  - {task: "acme\\x0bqa\\x1b[31m", tier: advisory}\n'
    status, err = _gate(tmp_path, capsys, folder, policy, "--report", str(tmp_path / "r"))
    assert status == GATE_EXIT, err
    xml = (tmp_path / "r" / "gate-junit.xml").read_bytes()
    document = validated_junit(xml)  # on 999703f lxml refuses the file: "PCDATA invalid Char value 11"
    suite = document.getroot().find("testsuite")
    assert suite.get("name") == "captrack gate: s\\x01ft"
    assert [c.get("name") for c in suite.findall("testcase")][-1] == "advisory task acme\\x0bqa\\x1b[31m"


# -- the report folder is checked before the decision; the exit printed is the exit returned ----------------------

def test_a_report_folder_that_cannot_be_used_is_refused_before_the_decision(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("a file where the report folder should be\n")
    for report, said in ((taken, "not a folder"), (taken / "gate", "not a folder"),
                         (OLD / "324e8e0-parent" / "gate", "a folder captrack writes whole")):
        status, err = _gate(tmp_path, capsys, OLD / "324e8e0-parent", POLICY, "--report", str(report))
        assert status == 1, err
        assert said in err and "nothing was decided" in err
        assert "exit 3" not in err and "fail" not in err, err  # on 999703f: "sft: fail (exit 3)", then exit 1
    assert not (OLD / "324e8e0-parent" / "gate").exists()


def test_compare_refuses_a_bad_gate_report_folder_before_comparing(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x\n")
    policy = tmp_path / "p.yaml"
    policy.write_text(POLICY)
    write_run(tmp_path / "base", "base", [FakeTask("captrack_probe_c2_logic", {"acc": [1, 0, 1, 1]})])
    write_run(tmp_path / "sft", "sft", [FakeTask("captrack_probe_c2_logic", {"acc": [1, 0, 0, 1]})])
    status = main(["compare", "--base", str(tmp_path / "base"), "--variant", f"sft={tmp_path / 'sft'}",
                   "--out", str(tmp_path / "out"), "--gate", str(policy), "--gate-report", str(taken)])
    err = capsys.readouterr().err
    assert status == 1 and "not a folder" in err and "nothing was run" in err, err
    assert not (tmp_path / "out").exists()


def test_the_last_exit_printed_is_the_exit_returned_with_fail_on_and_a_policy(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, worse = [1] * 300 + [0] * 100, [1] * 230 + [0] * 170  # -17.5 points on C2
    write_run(tmp_path / "base", "base", [FakeTask("captrack_probe_c2_logic", {"acc": base})])
    write_run(tmp_path / "sft", "sft", [FakeTask("captrack_probe_c2_logic", {"acc": worse})])
    policy = tmp_path / "p.yaml"
    policy.write_text("rules:\n  - {capability: C2, tier: advisory}\n")  # the policy passes: advisory only
    status = main(["compare", "--base", str(tmp_path / "base"), "--variant", f"sft={tmp_path / 'sft'}",
                   "--out", str(tmp_path / "out"), "--bootstrap", "0", "--fail-on", "regressed", "--gate", str(policy)])
    out = capsys.readouterr()
    said = [line for line in (out.out + out.err).splitlines() if "exit " in line]
    assert status == GATE_EXIT and said, said
    assert said[-1].startswith(f"exit {GATE_EXIT}:"), said  # on 999703f the last line said "sft: pass (exit 0)"


# -- a rule on a capability measured without a per-item CI ------------------------------------------------------

def test_a_rule_on_aggregate_scores_is_missing_with_the_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    scores = tmp_path / "scores.csv"
    scores.write_text("model,task,metric,value,base\nb,captrack_probe_c1_facts,acc,0.8,\nv,captrack_probe_c1_facts,acc,0.4,b\n")
    assert main(["compare", "--scores", str(scores), "--out", str(tmp_path / "s")]) == 0
    capsys.readouterr()
    status, err = _gate(tmp_path, capsys, tmp_path / "s", "rules:\n  - {capability: C1, tier: critical}\n"
                                                          "  - {capability: C3, tier: critical}\n")
    assert status == 0 and "v: warn (exit 0)" in err, err  # critical but not required: missing makes the decision warn
    assert "missing: v critical capability C1: MISSING: no verdict: measured without a per-item CI (aggregate scores" in err
    assert "missing: v critical capability C3: MISSING: not measured" in err  # C3: none of its tasks was compared
    status, err = _gate(tmp_path, capsys, tmp_path / "s", "rules:\n  - {capability: C1, tier: critical, required: true}\n",
                        "--report", str(tmp_path / "r"))
    assert status == GATE_EXIT and "v: fail (exit 3)" in err, err
    rule = json.loads((tmp_path / "r" / "gate.json").read_text())["rules"][0]
    assert rule["outcome"] == "missing" and "aggregate scores" in rule["reason"]
    case = validated_junit((tmp_path / "r" / "gate-junit.xml").read_bytes()).getroot().find("testsuite/testcase")
    assert case.find("failure").get("type") == "missing" and "aggregate scores" in case.find("failure").get("message")


def test_a_table_past_the_size_bound_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = _copy(tmp_path, "324e8e0-parent")
    with (folder / "drift.csv").open("wb") as handle:  # 300 MB, sparse: refused from its size
        handle.truncate(300 * 1024 * 1024)
    status, err = _gate(tmp_path, capsys, folder)
    assert status == 1 and "drift.csv" in err and "larger than 256 MiB" in err and "(exit" not in err, err
