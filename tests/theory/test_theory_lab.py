"""`run_theory` writes its outputs; the claim checks can fail; the `theory` subcommand works."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from captrack.theory.claims import evaluate_claims
from captrack.theory.cli import add_theory_parser
from captrack.theory.experiments import Grid, Results, run_grid
from captrack.theory.lab import run_theory

TINY = replace(Grid.quick(), separations=(2.0, 4.0, 6.0), dims=(2,), n_batches=500)


@pytest.fixture(scope="module")
def quick_lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    import matplotlib

    out = tmp_path_factory.mktemp("theory")
    before = {key: repr(value) for key, value in matplotlib.rcParams.items()}
    summary = run_theory(out, quick=True)
    after = {key: repr(value) for key, value in matplotlib.rcParams.items()}
    changed = sorted(k for k in before if before[k] != after.get(k) and k not in ("backend", "backend_fallback"))
    return out, {**summary, "_rc_changed": changed}  # (the Agg backend, chosen for files, changes no drawing)


def test_the_theory_figures_leave_the_callers_matplotlib_settings_as_they_were(quick_lab: tuple[Path, dict]) -> None:
    # A global seaborn theme set here once changed every later figure drawn in the same process (a board's
    # heatmap drawn in-process then differed from the one its background child drew).
    assert quick_lab[1]["_rc_changed"] == []


@pytest.fixture(scope="module")
def tiny() -> Results:
    return run_grid(TINY)


def test_run_theory_writes_tables_figures_and_claims(quick_lab: tuple[Path, dict]) -> None:
    out, summary = quick_lab
    for name in ("runs.csv", "trajectories.csv", "replay_estimator.csv", "claims.json", "claims.md"):
        assert (out / name).stat().st_size > 0, name
    for stem in ("trajectories", "drift_vs_separation", "final_old_weight"):
        assert (out / f"{stem}.png").read_bytes()[:4] == b"\x89PNG"
        assert "<svg" in (out / f"{stem}.svg").read_text()[:2000]
    stored = json.loads((out / "claims.json").read_text())
    assert stored["all_supported"] is summary["all_supported"] is True
    ids = {c["id"] for c in stored["claims"]}
    assert {"forward_kl_mass_forgetting", "forward_kl_replay_sets_old_weight", "reverse_kl_keeps_old_weight",
            "reverse_kl_drift_overlap_gated", "reverse_kl_replay_keeps_optimum",
            "reverse_kl_replay_prevents_starvation"} == ids
    markdown = (out / "claims.md").read_text()
    assert markdown.count("| yes |") == len(ids)
    runs = pd.read_csv(out / "runs.csv")
    assert set(runs.objective) == {"forward", "reverse"}
    assert -0.3125 <= stored["drift_fit"]["slope"] <= -0.05


def _verdicts(results: Results) -> dict[str, bool]:
    return {c.id: c.supported for c in evaluate_claims(results)}


def test_claims_hold_on_a_tiny_grid(tiny: Results) -> None:
    assert all(_verdicts(tiny).values()), evaluate_claims(tiny)


def test_claims_fail_when_the_old_weight_survives_forward_kl(tiny: Results) -> None:
    runs = tiny.runs.copy()
    mask = (runs.objective == "forward") & (runs.replay == 0)
    runs.loc[mask, ["final_old_weight", "final_old_mass"]] = 0.4
    assert _verdicts(replace(tiny, runs=runs))["forward_kl_mass_forgetting"] is False


def test_claims_fail_when_reverse_kl_loses_the_old_mode(tiny: Results) -> None:
    runs = tiny.runs.copy()
    runs.loc[runs.objective == "reverse", "final_old_weight"] = 0.0
    verdicts = _verdicts(replace(tiny, runs=runs))
    assert verdicts["reverse_kl_keeps_old_weight"] is False
    assert verdicts["reverse_kl_replay_keeps_optimum"] is False


def test_claims_fail_when_drift_does_not_decay(tiny: Results) -> None:
    runs = tiny.runs.copy()
    runs.loc[runs.objective == "reverse", "peak_old_drift"] = 0.1 * (1.0 + 0.01 * runs.delta_sq)
    assert _verdicts(replace(tiny, runs=runs))["reverse_kl_drift_overlap_gated"] is False


def test_claims_fail_when_replay_does_not_end_starvation(tiny: Results) -> None:
    estimator = tiny.estimator.copy()
    estimator["starved_share"] = 0.4
    assert _verdicts(replace(tiny, estimator=estimator))["reverse_kl_replay_prevents_starvation"] is False


def test_theory_subcommand_calls_run_theory_and_returns_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    calls = []

    def fake(out: Path, quick: bool = False, progress: bool = False) -> dict:
        calls.append((out, quick))
        return {"claims": [{"id": "c", "supported": True, "headline": "numbers", "criterion": "x"}]}

    monkeypatch.setattr("captrack.theory.lab.run_theory", fake)
    parser = argparse.ArgumentParser(prog="captrack")
    add_theory_parser(parser.add_subparsers())
    args = parser.parse_args(["theory", "--out", str(tmp_path), "--quick"])
    assert args.func(args) == 0
    assert calls == [(tmp_path, True)]
    assert "supported" in capsys.readouterr().out
