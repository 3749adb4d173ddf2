"""Reading Slurm's job completion log (jobcomp/filetxt) for jobs squeue and sacct no longer know.

The records below have the fields and layout a real slurmctld 22-24 wrote on this project's single-node cluster
(scripts/slurm-up.sh), cut to those the reader uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.pipeline.executors import slurm_queue

_SPLIT_TASK = ("JobId={job} UserId=root(0) Name=captrack-evaluate JobState={state} NodeList=vm WorkDir=/w "
               "ArrayJobId={array} ArrayTaskId={task} DerivedExitCode=0:0 ExitCode={code}")
_WHOLE_ARRAY = ("JobId={array} UserId=root(0) Name=captrack-evaluate JobState=CANCELLED NodeList=(null) NodeCnt=0 "
                "WorkDir=/w SubmitTime=2026-11-29T17:57:26 EligibleTime=unknown DerivedExitCode=0:0 ExitCode=0:0")


@pytest.fixture()
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "jobcomp.log"
    monkeypatch.setattr(slurm_queue, "completion_log", lambda: path)
    return path


def test_an_array_cancelled_before_it_split_is_cancelled_for_each_task(log: Path) -> None:
    log.write_text(_WHOLE_ARRAY.format(array=170) + "\n")
    states = slurm_queue._completion_records(["170_0", "170_1"])
    assert {k: v.state for k, v in states.items()} == {"170_0": "CANCELLED", "170_1": "CANCELLED"}


def test_a_tasks_own_record_wins_over_the_arrays(log: Path) -> None:
    log.write_text("\n".join([
        _SPLIT_TASK.format(job=171, state="COMPLETED", array=170, task=0, code="0:0"),
        _SPLIT_TASK.format(job=172, state="PENDING", array=170, task=1, code="0:0"),  # a requeue: not final
        _WHOLE_ARRAY.format(array=170),
    ]) + "\n")
    states = slurm_queue._completion_records(["170_0", "170_1"])
    assert states["170_0"].state == "COMPLETED" and states["170_0"].node == "vm"
    assert states["170_1"].state == "CANCELLED"


def test_an_unrelated_job_with_the_same_number_is_not_read_as_a_plain_job(log: Path) -> None:
    log.write_text(_WHOLE_ARRAY.format(array=170) + "\n")
    assert slurm_queue._completion_records(["171_0"]) == {}
    assert slurm_queue._completion_records(["170"])["170"].state == "CANCELLED"
