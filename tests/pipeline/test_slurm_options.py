"""The slurm executor's `executor:` block: what each key becomes in the batch script submitit writes, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from captrack.errors import InputError, UnknownNameError
from captrack.pipeline.executors import EXECUTORS
from captrack.pipeline.executors.slurm import SlurmExecutor, sbatch_parameters
from captrack.pipeline.jobs import Needs, StageJob

JOB = StageJob("evaluate", "eval-base-0", "evaluate base (seed 0)", {"out": "/w/runs/base"}, Needs(gpus=2, ranks=2, threads=4))


def _script(options: dict[str, object], job: StageJob = JOB) -> str:
    """The sbatch script submitit writes for `job` under these options (submitit's own renderer)."""
    from submitit.slurm.slurm import _make_sbatch_string

    params = sbatch_parameters(options, job)
    params["mem"] = f"{params.pop('mem_gb')}GB" if "mem_gb" in params else None
    return _make_sbatch_string(command="python -m submitit.core._submit /w/slurm", folder=Path("/w/slurm"),
                               **{k: v for k, v in params.items() if v is not None})


def test_every_key_of_the_block_reaches_the_batch_script() -> None:
    script = _script({"partition": "gpu", "account": "lab", "qos": "high", "time": "1-02:30:00", "gpus": 4, "cpus": 16,
                      "mem_gb": 64, "constraint": "a100", "sbatch": ["#SBATCH --exclusive", "--reservation=eval"],
                      "setup": ["module load cuda/12.4", "source /opt/venv/bin/activate"]})
    for line in ("#SBATCH --partition=gpu", "#SBATCH --account=lab", "#SBATCH --qos=high", "#SBATCH --time=1590",
                 "#SBATCH --gpus-per-node=4", "#SBATCH --cpus-per-task=16", "#SBATCH --mem=64GB",
                 "#SBATCH --constraint=a100", "#SBATCH --exclusive", "#SBATCH --reservation=eval",
                 "#SBATCH --job-name=captrack-eval-base-0", "module load cuda/12.4", "source /opt/venv/bin/activate"):
        assert line in script.splitlines(), (line, script)
    assert script.index("module load cuda/12.4") < script.index("srun")  # setup runs before the job


def test_without_options_a_job_asks_for_what_it_needs_and_a_day() -> None:
    script = _script({}).splitlines()
    assert "#SBATCH --gpus-per-node=2" in script and "#SBATCH --cpus-per-task=8" in script  # 2 ranks x 4 threads
    assert "#SBATCH --time=1440" in script  # not submitit's 5 minutes
    assert not any(line.startswith(("#SBATCH --partition", "#SBATCH --mem", "#SBATCH --account")) for line in script)
    cpu_job = StageJob("evaluate", "eval-base-0", "t", {}, Needs())
    assert not any("gpus" in line for line in _script({}, cpu_job).splitlines())


@pytest.mark.parametrize(("options", "message"), [
    ({"time": "soon"}, "executor time 'soon' is neither minutes nor"),
    ({"time": 0}, "executor time 0"),
    ({"gpus": "two"}, "executor gpus must be a whole number"),
    ({"mem_gb": -1}, "executor mem_gb must be a positive number"),
    ({"sbatch": ["exclusive"]}, "sbatch line 'exclusive' is not an sbatch option"),
    ({"setup": "module load x"}, None),  # one line is taken as a list of one
    ({"setup": [3]}, "executor setup must be a list of text lines"),
    ({"poll_s": 0}, "executor poll_s must be a positive number"),
])
def test_values_that_cannot_be_used_are_refused_before_any_work(options: dict[str, object], message: str | None) -> None:
    if message is None:
        SlurmExecutor.check_options(options, "exp.yaml")
        return
    with pytest.raises(InputError, match=message):
        SlurmExecutor.check_options(options, "exp.yaml")


def test_an_unknown_key_is_refused_with_the_close_one() -> None:
    assert EXECUTORS.get("slurm") is SlurmExecutor
    with pytest.raises(UnknownNameError, match="did you mean 'partition'"):
        SlurmExecutor.check_options({"partiton": "gpu"}, "exp.yaml")
