"""Every command-line value follows the rules its YAML key follows (one definition, captrack.schemas): margins
finite, > 0 and at most 100 points, bounded bootstrap counts, no blank field names, finite epochs, steps a store
can hold, callback step counts that are whole numbers, seeds ≥ 0, sizes and lengths > 0 (issue 40)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from captrack.cli import main
from captrack.errors import InputError


def _refused(capsys: pytest.CaptureFixture[str], argv: list[str], flag: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    err = capsys.readouterr().err
    assert exited.value.code == 2 and f"argument {flag}" in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("margin", ["-5", "0", "nan", "inf", "-inf", "101"])
def test_compare_refuses_a_margin_that_is_not_finite_positive_and_bounded(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, margin: str) -> None:
    _refused(capsys, ["compare", "--scores", "s.csv", "--out", str(tmp_path), f"--margin={margin}"], "--margin")


@pytest.mark.parametrize("count", ["-5", "200000000", "1.5"])
def test_compare_refuses_a_bootstrap_count_outside_its_bounds(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, count: str) -> None:
    _refused(capsys, ["compare", "--scores", "s.csv", "--out", str(tmp_path), f"--bootstrap={count}"], "--bootstrap")


@pytest.mark.parametrize(("flag", "value"), [("--cluster", ""), ("--cluster", "  "), ("--by", ""), ("--by", "a/b"),
                                             ("--seed", "-1")])
def test_compare_refuses_blank_fields_and_negative_seeds(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str) -> None:
    _refused(capsys, ["compare", "--scores", "s.csv", "--out", str(tmp_path), f"{flag}={value}"], flag)


@pytest.mark.parametrize(("flag", "value"), [("--epoch", "nan"), ("--epoch", "inf"), ("--epoch", "-1"),
                                             ("--step", "-1"), ("--step", str(2**63)), ("--replicate", "-1")])
def test_ingest_refuses_steps_epochs_and_replicates_out_of_range(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str) -> None:
    _refused(capsys, ["ingest", str(tmp_path), "--store", str(tmp_path / "s.duckdb"), "--step", "1", f"{flag}={value}"],
             flag)
    assert not (tmp_path / "s.duckdb").exists()


@pytest.mark.parametrize(("flag", "value"), [("--seq-len", "-4096"), ("--batch-size", "0"), ("--gpus", "0"),
                                             ("--gpu-mem", "1.2.3GB"), ("--gpu-mem", "0GB"), ("--gpu-mem", "80XB"),
                                             ("--gpu-mem", "")])
def test_plan_memory_refuses_negative_lengths_and_malformed_sizes(
        capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    _refused(capsys, ["plan-memory", "--model", "config.json", f"{flag}={value}"], flag)


@pytest.mark.parametrize(("flag", "value"), [("--timeout", "nan"), ("--backoff", "-1"), ("--concurrency", "0"),
                                             ("--judge-budget", "-5"), ("--retries", "-1")])
def test_judge_refuses_non_finite_times_and_negative_counts(
        capsys: pytest.CaptureFixture[str], flag: str, value: str) -> None:
    _refused(capsys, ["judge", "--judge", "openai:x", f"{flag}={value}"], flag)


@pytest.mark.parametrize("margin", [float("inf"), float("nan"), 0, -5, 1000])
def test_the_schemas_refuse_the_margins_the_command_line_refuses(margin: float, tmp_path: Path) -> None:
    from captrack.schemas import LeaderboardFile, parse_config

    with pytest.raises(InputError, match="margin"):
        parse_config(LeaderboardFile, {"store": "s.duckdb", "margin": margin}, tmp_path / "leaderboard.yaml", "leaderboard")


def test_the_schemas_refuse_a_negative_seed_and_a_huge_bootstrap(tmp_path: Path) -> None:
    from captrack.schemas import ExperimentFile, LeaderboardFile, parse_config

    with pytest.raises(InputError, match=r"seeds\[0\]"):
        parse_config(ExperimentFile, {"base": {"name": "b"}, "variants": [{"name": "v"}], "seeds": [-1]},
                     tmp_path / "e.yaml", "experiment")
    with pytest.raises(InputError, match="bootstrap"):
        parse_config(LeaderboardFile, {"store": "s", "bootstrap": 200_000_000}, tmp_path / "l.yaml", "leaderboard")


class _Trainer:
    class args:
        output_dir = "out"


@pytest.mark.parametrize("every", ["2", 1.5, True, 0])
def test_the_callback_refuses_a_step_count_that_is_not_a_whole_number(every: Any) -> None:
    from captrack.training.callback import CapTrackCallback

    with pytest.raises(InputError, match="every"):
        CapTrackCallback(_Trainer(), tasks=["captrack_probe_c1_facts"], every=every)
