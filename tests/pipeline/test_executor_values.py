"""Executor blocks and GPU inventories that cannot be used are refused in one line before any work (issue 51):
a GPU count that would build millions of objects, ids that are no GPUs, a Slurm field that would inject a shell
line into the batch script, numbers that are not finite, a time that is no Slurm time, local workers: 0."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from captrack.errors import InputError
from captrack.pipeline.executors.local import LocalExecutor, gpu_inventory
from captrack.pipeline.executors.slurm import SlurmExecutor
from captrack.pipeline.jobs import Needs, StageJob
from captrack.pipeline.layout import WorkFolder

JOB = StageJob("evaluate", "eval-base-0", "evaluate base (seed 0)", {"out": "/w/runs/base"}, Needs(threads=1))


@pytest.mark.parametrize(("text", "message"), [
    ("99999999999999999999x1GB", "a node has at most 4096"),
    ("5000", "a node has at most 4096"),
    ("0,0", "names GPU 0 twice"),
    ("1:80GB,1:40GB", "names GPU 1 twice"),
    ("true", "'true' is no GPU id"),
    ("-1", "'-1' is no GPU id"),
    ("0,-1", "'-1' is no GPU id"),
])
def test_an_inventory_that_is_no_set_of_gpus_is_refused_in_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as refused:
        gpu_inventory(env={"CAPTRACK_GPUS": text})
    assert "\n" not in str(refused.value) and "CAPTRACK_GPUS" in str(refused.value)


def test_real_inventories_still_read() -> None:
    assert [g.id for g in gpu_inventory(env={"CAPTRACK_GPUS": "4096x1GB"})][-1] == "4095"
    assert [g.id for g in gpu_inventory(env={"CAPTRACK_GPUS": "3:24GB,GPU-8f3a-11ee:80GB"})] == ["3", "GPU-8f3a-11ee"]
    assert gpu_inventory(env={"CAPTRACK_GPUS": "0"}) == []


@pytest.mark.parametrize(("options", "message"), [
    ({"workers": 0}, "workers: 0: give a whole number ≥ 1"),
    ({"workers": True}, "workers: True"),
    ({"gpus": True}, "gpus: True is no GPU inventory"),
    ({"gpus": "0,0"}, "names GPU 0 twice"),
    ({"gpus": 2.5}, "gpus: 2.5 is no GPU inventory"),
])
def test_local_options_that_cannot_be_used_are_refused_when_checked(options: dict[str, object], message: str) -> None:
    """check_options is what validation (and so --dry-run) calls: the refusal comes before any work."""
    with pytest.raises(InputError, match=message):
        LocalExecutor.check_options(options, "exp.yaml")


def test_local_workers_zero_and_gpus_true_fail_the_dry_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from captrack.cli import main

    for block, said in (("{name: local, workers: 0}", "workers: 0"), ("{name: local, gpus: true}", "gpus: True")):
        manifest = tmp_path / "exp.yaml"
        manifest.write_text("tasks: [captrack_probe_c1_facts]\nbase: {name: base, model_args: {pretrained: smollm2-135m-instruct}}\n"
                            "variants:\n  - {name: v, model_args: {pretrained: smollm2-135m-instruct}}\n"
                            f"executor: {block}\n")
        assert main(["run", str(manifest), "--dry-run"]) == 1
        err = capsys.readouterr().err
        assert said in err and "would run" not in err


@pytest.mark.parametrize(("options", "message"), [
    ({"poll_s": float("inf")}, "poll_s must be a positive number"),
    ({"poll_s": float("nan")}, "poll_s must be a positive number"),
    ({"mem_gb": float("nan")}, "mem_gb must be a positive number"),
    ({"mem_gb": float("inf")}, "mem_gb must be a positive number"),
    ({"time": "25:99"}, "time '25:99'"),
    ({"time": "1:99:00"}, "minutes and seconds under 60"),
    ({"time": "2-25:00:00"}, "hours under 24 after days"),
    ({"time": "04:00"}, "Slurm reads A:B as minutes:seconds"),
    ({"time": 10**12}, "between 1 and"),
    ({"partition": "gpu\ntouch /tmp/x"}, "partition 'gpu\\\\ntouch /tmp/x' holds a line break"),
    ({"account": "lab\rx"}, "account"),
    ({"qos": "a\x1b[31m"}, "qos"),
    ({"constraint": "a100\n#SBATCH --exclusive"}, "constraint"),
])
def test_slurm_values_that_are_no_slurm_values_are_refused(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message) as refused:
        SlurmExecutor.check_options(options, "exp.yaml")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(("time", "minutes"), [("1-02:30:00", 1590), ("2-12", 3600), ("1-00:30", 1470),
                                               ("48:00:00", 2880), ("00:00:30", 1), (90, 90), ("90", 90)])
def test_every_slurm_time_form_still_reads(time: object, minutes: int) -> None:
    from captrack.pipeline.executors.slurm import sbatch_parameters

    assert sbatch_parameters({"time": time}, JOB)["time"] == minutes


def _fake_slurm(folder: Path) -> Path:
    """sbatch that runs the batch script with bash at once (srun: does nothing), as a node would, without a cluster."""
    folder.mkdir()
    commands = {"sbatch": '#!/bin/sh\nbash "$1" >/dev/null 2>&1\necho "Submitted batch job 4242"\n',
                "srun": "#!/bin/sh\nexit 0\n", "squeue": "#!/bin/sh\nexit 0\n", "scancel": "#!/bin/sh\nexit 0\n"}
    for name, text in commands.items():
        (folder / name).write_text(text)
        (folder / name).chmod(stat.S_IRWXU)
    return folder


@pytest.mark.parametrize("key", ["partition", "account", "qos", "constraint"])
def test_a_newline_in_a_slurm_field_runs_no_injected_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
    """submitit's own batch script, run by bash as Slurm would: the field's second line must never run."""
    pytest.importorskip("submitit")
    injected = tmp_path / "INJECTED"
    monkeypatch.setenv("PATH", f"{_fake_slurm(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}")
    value = f"x\ntouch {injected}\n#"  # submitit quotes the value: the closing quote lands on the comment line after
    executor = SlurmExecutor(WorkFolder(tmp_path / "work"), {key: value}, log=lambda _: None)
    spec = JOB.write(tmp_path / "work" / "jobs" / f"{JOB.id}.json")
    refused = ""
    try:
        executor.submit(JOB, spec)
    except InputError as exc:
        refused = str(exc)
    assert not injected.exists(), f"the {key}'s second line ran as a shell line of the batch script"
    assert f"executor {key}" in refused and "line break" in refused
    assert not list((tmp_path / "work").glob("slurm/*.sh")), "a batch script was written"
