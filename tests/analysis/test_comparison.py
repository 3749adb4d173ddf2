"""`captrack compare` on synthetic lm-eval runs: pairing, mismatches, NaN, replicates, outputs."""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.comparison import DRIFT_COLUMNS, TRANSITION_COLUMNS
from captrack.cli import main

FACTS = "captrack_probe_c1_facts"
STYLE = "captrack_probe_w3_style"
IF = "captrack_probe_h1_constraints"


def _write(root: Path, name: str, acc: list, words: list | None = None, seed: int = 0, **task_kw: object) -> Path:
    tasks = [FakeTask(FACTS, {"acc": acc}, **task_kw)]  # type: ignore[arg-type]
    if words is not None:
        tasks.append(FakeTask(STYLE, {"verbosity": words}, output_type="generate_until"))
    write_run(root / name, name, tasks, seed=seed, date_id=f"2026-01-01T00-00-0{seed}.000000")
    return root / name


def _compare(tmp_path: Path, *args: str) -> int:
    return main(["compare", *args, "--out", str(tmp_path / "out"), "--bootstrap", "200"])


def _csv(tmp_path: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(tmp_path / "out" / name)


def test_outputs_follow_the_contract(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 1, 1, 0, 0, 0, 1, 0], [10, 20, 30, 40, 10, 20, 30, 40])
    sft = _write(tmp_path, "sft", [1, 0, 0, 1, 0, 0, 1, 1], [20, 20, 30, 40, 10, 20, 30, 50])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"sft={sft}:SFT") == 0

    trans = _csv(tmp_path, "transitions.csv")
    assert list(trans.columns) == TRANSITION_COLUMNS
    row = trans.iloc[0]
    assert (row["variant"], row["algorithm"], row["capability"], row["group"]) == ("sft", "SFT", "C1", "CAN")
    assert (row["n"], row["n_11"], row["n_10"], row["n_01"], row["n_00"], row["k"]) == (8, 2, 2, 2, 2, 4)
    assert row["forgetting_adj"] == pytest.approx(0.25 - 0.25 / 3)
    assert row["mcnemar_p"] == pytest.approx(1.0)

    drift = _csv(tmp_path, "drift.csv").set_index("task")
    assert list(_csv(tmp_path, "drift.csv").columns) == DRIFT_COLUMNS
    assert drift.loc[FACTS, "rel_drift_pct"] == pytest.approx(0.0)
    words = drift.loc[STYLE]
    assert words["rel_drift_pct"] == pytest.approx(100 * (220 - 200) / 200)
    assert words["direction"] == "neutral" and words["oriented_drift_pct"] == pytest.approx(abs(words["rel_drift_pct"]))
    assert words["ci_low"] <= words["rel_drift_pct"] <= words["ci_high"]

    caps = _csv(tmp_path, "capabilities.csv")
    w3a = caps[(caps["level"] == "capability") & (caps["key"] == "W3a")].iloc[0]
    assert w3a["mean_rel_drift_pct"] == pytest.approx(words["rel_drift_pct"]) and w3a["n_metrics"] == 1
    assert set(caps.loc[caps["level"] == "group", "key"]) == {"CAN", "WILL", "HOW"}

    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["sft"]["paired_items"][f"{FACTS}/acc"] == 8
    assert "report.md" in summary["files"]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "C1 Parametric knowledge & skills" in report and "## sft (SFT)" in report


def test_different_limit_is_refused_with_the_difference_listed(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 0, 1, 0, 1, 0])
    short = _write(tmp_path, "short", [1, 0, 1, 0])
    message = _mismatch_message(tmp_path, base, short)
    assert "2 (doc, metric) rows only in the base" in message and "--allow-partial" in message


def _mismatch_message(tmp_path: Path, base: Path, variant: Path, *extra: str) -> str:
    """Run compare, expect exit status 1, and return the printed error on one line."""
    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer):
        status = _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}", *extra)
    assert status == 1
    return buffer.getvalue().replace("\n", " ")


def test_allow_partial_analyses_the_intersection_and_warns(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 0, 1, 0, 1, 0])
    short = _write(tmp_path, "short", [0, 0, 1, 0])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={short}", "--allow-partial") == 0
    trans = _csv(tmp_path, "transitions.csv").iloc[0]
    assert (trans["n"], trans["n_10"]) == (4, 1)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert any("intersection" in w for w in summary["warnings"])


def test_different_documents_and_versions_are_listed(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 0, 1])
    other = tmp_path / "other"
    write_run(other, "other", [FakeTask(FACTS, {"acc": [1, 0, 1]}, version=2.0, doc_text={0: "a different question"})])
    message = _mismatch_message(tmp_path, base, other)
    assert "version 1.0 in the base but 2.0 in the variant" in message


def test_metric_missing_in_one_run(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 0, 1], [5, 6, 7])
    variant = _write(tmp_path, "v", [1, 1, 1])
    message = _mismatch_message(tmp_path, base, variant)
    assert "metrics logged only by 'base'" in message and "verbosity" in message


def test_nan_values_are_excluded_and_counted(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, None, 1, 0])
    variant = _write(tmp_path, "v", [1, 1, None, 0])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    assert _csv(tmp_path, "transitions.csv").iloc[0]["n"] == 2
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["v"]["nan_excluded"] == {f"{FACTS}/acc": 2}


def test_zero_base_gives_nan_drift_and_a_warning(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [0, 0, 0, 0])
    variant = _write(tmp_path, "v", [1, 0, 0, 0])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    drift = _csv(tmp_path, "drift.csv").iloc[0]
    assert math.isnan(drift["rel_drift_pct"])
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["v"]["zero_base"] == [f"{FACTS}/acc"]
    caps = _csv(tmp_path, "capabilities.csv")
    c1 = caps[caps["key"] == "C1"].iloc[0]
    assert math.isnan(c1["mean_rel_drift_pct"]) and c1["n_metrics"] == 0


def test_replicates_pair_seed_by_seed(tmp_path: Path) -> None:
    # seed 0: base [1,1,0,0] -> variant [1,0,0,0]; seed 1: base [1,1,1,0] -> variant [1,1,1,1]
    for seed, b, v in ((0, [1, 1, 0, 0], [1, 0, 0, 0]), (1, [1, 1, 1, 0], [1, 1, 1, 1])):
        _write(tmp_path / "base_runs", f"s{seed}", b, seed=seed)
        _write(tmp_path / "var_runs", f"s{seed}", v, seed=seed)
    assert _compare(tmp_path, "--base", str(tmp_path / "base_runs"), "--variant", f"v={tmp_path / 'var_runs'}") == 0
    trans = _csv(tmp_path, "transitions.csv").iloc[0]
    assert (trans["n"], trans["n_10"], trans["n_01"]) == (8, 1, 1)
    reps = _csv(tmp_path, "replicates.csv").set_index("replicate")
    assert reps.loc[0, "rel_drift_pct"] == pytest.approx(-50.0)
    assert reps.loc[1, "rel_drift_pct"] == pytest.approx(100 * (1 - 0.75) / 0.75)
    drift = _csv(tmp_path, "drift.csv").iloc[0]
    assert drift["base_value"] == pytest.approx(5 / 8) and drift["variant_value"] == pytest.approx(5 / 8)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    spread = summary["replicate_spread_pct"]["v"]["C1"]
    assert spread == pytest.approx(np.std([-50.0, 100 / 3]))


def test_bootstrap_is_seeded(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    base = _write(tmp_path, "base", list((rng.random(300) < 0.6).astype(float)))
    variant = _write(tmp_path, "v", list((rng.random(300) < 0.5).astype(float)))
    cis = []
    for _ in range(2):
        assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}", "--seed", "7") == 0
        cis.append(tuple(_csv(tmp_path, "drift.csv").iloc[0][["ci_low", "ci_high"]]))
    assert cis[0] == cis[1] and cis[0][0] < cis[0][1]


def test_lower_is_better_binary_metric_counts_1_as_bad(tmp_path: Path) -> None:
    from captrack.analysis.variant_part import _transition_row
    from captrack.labels import VariantLabels
    from captrack.metrics import MetricSpec

    frame = pd.DataFrame([{"n_11": 1, "n_10": 2, "n_01": 3, "n_00": 4, "k": None}])
    spec = MetricSpec("harm", "lower", "binary", "1 is harmful")
    row = _transition_row(VariantLabels(name="v"), "t", "harm", {c: frame[c].to_numpy() for c in frame}, spec)
    assert (row["n_10"], row["n_01"]) == (3, 2)  # 0→1 (became harmful) is the forgetting


def test_distribution_diagnostics_from_per_choice_loglikelihoods(tmp_path: Path) -> None:
    # gold is option 0 everywhere. Base: confident and right on all 4 items.
    base_lls = {i: [-0.1, -4.0, -4.0, -4.0] for i in range(4)}
    variant_lls = {
        0: [-9.0, -0.1, -4.0, -4.0],  # collapse: gold/base answer gets almost no mass
        1: [-1.0, -0.8, -4.0, -4.0],  # drift: a near tie flipped (0.2 nats)
        2: [-0.1, -4.0, -4.0, -4.0],  # unchanged
        3: [-1.2, -3.0, -3.0, -3.0],  # still right, but gold probability fell a lot: eroding
    }
    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": [1, 1, 1, 1]}, choice_lls=base_lls)])
    write_run(tmp_path / "v", "v", [FakeTask(FACTS, {"acc": [0, 0, 1, 1]}, choice_lls=variant_lls)])
    assert _compare(tmp_path, "--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}") == 0
    dist = _csv(tmp_path, "distribution.csv").iloc[0]
    assert (dist["n_forgotten"], dist["n_collapse"], dist["n_drift"], dist["n_eroding"]) == (2, 1, 1, 1)
    assert (tmp_path / "out" / "calibration.csv").is_file()
    assert "Inside the forgetting" in (tmp_path / "out" / "report.md").read_text()


def test_identical_runs_have_full_overlap_and_no_collapse(tmp_path: Path) -> None:
    lls = {i: [-0.5, -1.0 - i, -2.0, -3.0] for i in range(5)}
    for name in ("base", "same"):
        write_run(tmp_path / name, name, [FakeTask(FACTS, {"acc": [1, 1, 1, 1, 1]}, choice_lls=lls)])
    assert _compare(tmp_path, "--base", str(tmp_path / "base"), "--variant", f"same={tmp_path / 'same'}") == 0
    dist = _csv(tmp_path, "distribution.csv").iloc[0]
    assert dist["mean_bc"] == pytest.approx(1.0) and dist["n_collapse"] == 0 and dist["n_drift"] == 0
    calib = _csv(tmp_path, "calibration.csv").iloc[0]
    assert calib["ece_change"] == pytest.approx(0.0) and calib["brier_change"] == pytest.approx(0.0)


def _transitions_from_samples(base_dir: Path, variant_dir: Path, task: str, metric: str) -> dict[str, int]:
    """n_11, n_10, n_01, n_00 computed straight from two runs' samples files (paired on doc_hash)."""
    def read(folder: Path) -> dict[str, float]:
        path = next(folder.rglob(f"samples_{task}_*.jsonl"))
        return {row["doc_hash"]: float(row[metric]) for row in map(json.loads, path.read_text().splitlines())}

    base, variant = read(base_dir), read(variant_dir)
    pairs = [(base[h], variant[h]) for h in base.keys() & variant.keys()]
    return {f"n_{b}{v}": sum(1 for x, y in pairs if (x, y) == (b, v)) for b, v in ((1, 1), (1, 0), (0, 1), (0, 0))}


def test_one_run_each_with_different_seeds_pairs_in_folder_mode(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 1, 0, 0, 1, 1, 0], seed=1)
    variant = _write(tmp_path, "v", [1, 0, 1, 0, 0, 1, 1], seed=2)
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    row = _csv(tmp_path, "transitions.csv").set_index("task").loc[FACTS]
    expected = _transitions_from_samples(base, variant, FACTS, "acc")
    assert {k: int(row[k]) for k in expected} == expected == {"n_11": 2, "n_10": 2, "n_01": 2, "n_00": 1}
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["counts"]["v"]["seeds"] == {"base": 1, "variant": 2}
    assert any("different seeds" in w and "several --seed" in w for w in summary["warnings"])


def test_several_runs_on_one_side_still_pair_seed_by_seed(tmp_path: Path) -> None:
    for seed in (1, 2):
        _write(tmp_path / "base_runs", f"s{seed}", [1, 0, 1], seed=seed)
    variant = _write(tmp_path, "v", [1, 1, 1], seed=3)
    message = _mismatch_message(tmp_path, tmp_path / "base_runs", variant)
    assert "seeds) differ: base has [1, 2], variant has [3]" in message and "same --seed" in message


def test_nothing_paired_is_a_clear_error_and_out_is_left_as_it_was(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 0, 1])
    other = tmp_path / "other"
    write_run(other, "other", [FakeTask(IF, {"prompt_level_strict_acc": [1, 0, 1]}, output_type="generate_until")])
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.md").write_text("an earlier report")
    message = _mismatch_message(tmp_path, base, other, "--allow-partial")
    assert "no scored item in common" in message and "nothing to compare" in message
    assert [p.name for p in out.iterdir()] == ["report.md"] and (out / "report.md").read_text() == "an earlier report"


def test_out_is_replaced_whole_and_a_foreign_folder_is_refused(tmp_path: Path) -> None:
    """A file captrack wrote (in its manifest) is replaced by the next comparison; one it did not write is never
    touched: the comparison is refused naming it (issue 40: any .csv used to pass the guard and be deleted)."""
    base, variant = _write(tmp_path, "base", [1, 0, 1]), _write(tmp_path, "v", [1, 1, 1])
    out = tmp_path / "out"
    out.mkdir()
    (out / "stale.csv").write_text("not captrack's")
    message = _mismatch_message(tmp_path, base, variant)
    assert "holds stale.csv" in message and (out / "stale.csv").read_text() == "not captrack's"
    (out / "stale.csv").unlink()
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    assert (out / "summary.json").is_file()
    (out / "drift.csv").write_text("an earlier comparison's file, in the manifest")
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    assert (out / "drift.csv").read_text().startswith("variant,")  # captrack's own file replaced
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]  # no staging folder left behind
    (out / "notes.txt").write_text("mine")
    message = _mismatch_message(tmp_path, base, variant)
    assert "holds notes.txt" in message
    assert (out / "notes.txt").read_text() == "mine"


def test_an_all_nan_metric_is_left_out_with_its_reason_not_a_crash(tmp_path: Path) -> None:
    base = _write(tmp_path, "base", [1, 1, 0], words=[None, None, None])
    variant = _write(tmp_path, "v", [1, 0, 1], words=[None, None, None])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    assert list(_csv(tmp_path, "drift.csv")["task"]) == [FACTS]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert f"v: unscored (NaN) items excluded from pairing: {STYLE}/verbosity: 3" in summary["warnings"]


def test_own_tasks_join_through_an_extra_taxonomy_or_show_as_unmapped(tmp_path: Path) -> None:
    for name, acc, mmlu in (("base", [1, 1, 0], [1, 1, 0, 0]), ("v", [1, 0, 1], [1, 0, 0, 0])):
        write_run(tmp_path / name, name, [FakeTask(FACTS, {"acc": acc}), FakeTask("mmlu_anatomy", {"acc": mmlu})])
    args = ["--base", str(tmp_path / "base"), "--variant", f"v={tmp_path / 'v'}"]
    assert _compare(tmp_path, *args) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "### Unmapped tasks" in report and "`mmlu_anatomy/acc`" in report and "--taxonomy EXTRA.yaml" in report
    row = _csv(tmp_path, "transitions.csv").set_index("task").loc["mmlu_anatomy"]
    assert (row["n"], row["n_10"], row["n_01"]) == (4, 1, 0)

    extra = tmp_path / "extra.yaml"
    extra.write_text("groups:\n  CAN:\n    capabilities:\n      C1:\n        members:\n"
                     "          - {task: mmlu_anatomy, metric: acc, direction: higher}\n")
    assert _compare(tmp_path, *args, "--taxonomy", str(extra)) == 0
    caps = _csv(tmp_path, "capabilities.csv").set_index("key")
    assert caps.loc["C1", "n_metrics"] == 2 and "### Unmapped tasks" not in (tmp_path / "out" / "report.md").read_text()

    extra.write_text("groups:\n  CAN:\n    capabilities:\n      H1:\n        members:\n"
                     "          - {task: mmlu_anatomy, metric: acc, direction: higher}\n")
    message = _mismatch_message(tmp_path, tmp_path / "base", tmp_path / "v", "--taxonomy", str(extra))
    assert "capability H1 belongs to group HOW, not CAN" in message


def test_different_evaluation_settings_are_warned_about(tmp_path: Path) -> None:
    base, variant = _write(tmp_path, "base", [1, 0, 1]), _write(tmp_path, "v", [1, 1, 1])
    results = next(base.rglob("results_*.json"))
    data = json.loads(results.read_text())
    data.update({"chat_template_sha": "0123456789abcdef", "n-shot": {FACTS: 5}, "lm_eval_version": "0.4.12"})
    data["config"]["gen_kwargs"] = {"temperature": 0.7}
    results.write_text(json.dumps(data))
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    warnings = json.loads((tmp_path / "out" / "summary.json").read_text())["warnings"]
    report = (tmp_path / "out" / "report.md").read_text()
    for key, fix in (("chat template", "--apply_chat_template"), ("few-shot count", "--num_fewshot"),
                     ("generation kwargs", "--gen_kwargs"), ("lm-eval version", "same lm-eval version")):
        found = [w for w in warnings if w.startswith(f"v: {key} differs from base 'base'")]
        assert len(found) == 1 and fix in found[0] and found[0] in report, key
    assert "base applied (sha 0123456789ab), variant not applied" in " ".join(warnings)


def test_same_settings_give_no_setting_warning(tmp_path: Path) -> None:
    base, variant = _write(tmp_path, "base", [1, 0, 1]), _write(tmp_path, "v", [1, 1, 1])
    assert _compare(tmp_path, "--base", str(base), "--variant", f"v={variant}") == 0
    warnings = json.loads((tmp_path / "out" / "summary.json").read_text())["warnings"]
    assert not [w for w in warnings if "differs from base" in w]


def test_a_deepspeed_variant_in_another_dtype_is_warned_about_and_strict_refuses(tmp_path: Path) -> None:
    """Base on lm-eval's hf backend in bfloat16, variant on captrack-ds tp across 2 ranks in float32."""
    base, variant = _write(tmp_path, "base", [1, 0, 1]), _write(tmp_path, "v", [1, 1, 1])
    for folder, config in ((base, {"model": "hf", "model_dtype": "torch.bfloat16", "batch_size": 8}),
                           (variant, {"model": "captrack-ds", "model_dtype": "torch.float32", "batch_size": 8,
                                      "deepspeed_mode": "tp", "deepspeed_world_size": 2, "deepspeed_dtype": "float32",
                                      "deepspeed_offload": "none"})):
        results = next(folder.rglob("results_*.json"))
        data = json.loads(results.read_text())
        data["config"].update(config)
        results.write_text(json.dumps(data))
    args = ("--base", str(base), "--variant", f"v={variant}")
    assert _compare(tmp_path, *args) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    for key, shown in (("backend", "base hf, variant captrack-ds"), ("dtype", "base bfloat16, variant float32"),
                       ("placement", "base one process, variant mode=tp, offload=none"),
                       ("tensor-parallel degree", "base 1, variant 2")):
        assert f"v: {key} differs from base 'base': {shown}" in report, key
    assert "batch size differs" not in report
    strict = tmp_path / "strict"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(["compare", *args, "--out", str(strict), "--strict"])
    assert status == 1 and not strict.exists()
    assert "--strict: base and variant were evaluated with different settings" in err.getvalue()
    assert "dtype differs from base 'base': base bfloat16, variant float32" in err.getvalue()
