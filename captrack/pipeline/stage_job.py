"""The worker of a stage job: runs one spec (captrack.pipeline.jobs.StageJob) and nothing else.

    python -m captrack.pipeline.stage_job <workdir>/jobs/<id>.json

It reads the spec, never the experiment: what to run and with which files are in the spec's arguments.
Under a launcher (torchrun, DeepSpeed's) every rank runs the same spec; rank 0 alone clears the output
folder and writes the report. A worker started by :func:`captrack.processes.spawn` ends with its parent.
On success it writes its report (host, the CUDA_VISIBLE_DEVICES it was given, ranks, times, its interpreter) beside the
spec and exits 0; any error exits non-zero with its traceback in the log.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captrack.pipeline.jobs import StageJob, WorkerReport
from captrack.processes import die_with_parent, prepare_openmp
from captrack.registries import Registry

__all__ = ["JOB_KINDS", "run_job"]

JOB_KINDS: Registry[Callable[[dict[str, Any]], Any]] = Registry("stage job kind")
"""What a job of each kind runs, from its arguments alone."""


@JOB_KINDS.register("evaluate")
def _evaluate(args: dict[str, Any]) -> Any:
    """lm-eval on one checkpoint: ``{"spec": EvalSpec fields, "out": folder, "cache": request cache or null}``, through a
    server this job starts when ``"serve"`` names one (captrack.lmeval.served), ``"parallel"`` lm-eval processes at once."""
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    out = Path(args["out"])
    if int(os.environ.get("RANK", "0")) == 0:  # every rank runs the spec; one clears what an earlier try left
        shutil.rmtree(out, ignore_errors=True)
    spec = EvalSpec(**args["spec"])
    cache = Path(args["cache"]) if args.get("cache") else None
    if args.get("serve"):
        from captrack.lmeval.served import evaluate_served

        return evaluate_served(spec, out, cache, parallel=int(args.get("parallel", 1)))
    return evaluate_checkpoint(spec, out, cache)


@JOB_KINDS.register("train")
def _train(args: dict[str, Any]) -> Any:
    """A training recipe: ``{"recipe": {...}, "base": base model folder, "out": output folder}``."""
    from captrack.training.recipes import run_recipe

    return run_recipe(args["recipe"], Path(args["base"]), Path(args["out"]))


def run_job(job: StageJob) -> None:
    """Run `job` in this process (its kind's function on its arguments).

    Raises:
        UnknownNameError: a kind no worker knows (the spec was written by another captrack).
    """
    JOB_KINDS.get(job.kind)(job.args)


def _threads(job: StageJob) -> None:
    """Torch threads: CAPTRACK_THREADS as the executor set it, else the spec's."""
    prepare_openmp()
    os.environ.setdefault("OMP_NUM_THREADS", str(job.needs.threads))
    import torch

    torch.set_num_threads(max(1, int(os.environ.get("CAPTRACK_THREADS", str(job.needs.threads)))))


def _main(argv: list[str]) -> int:
    """Run the job in spec file ``argv[0]``; write its report when it ends well (rank 0)."""
    under_launcher = "LOCAL_RANK" in os.environ  # torchrun / DeepSpeed's launcher started this rank
    die_with_parent(os.getppid() if under_launcher else None)  # a rank dies with its launcher, a worker with its runner
    if "LOCAL_WORLD_SIZE" in os.environ:  # torchrun: what DeepSpeed's launcher calls LOCAL_SIZE
        os.environ.setdefault("LOCAL_SIZE", os.environ["LOCAL_WORLD_SIZE"])
    spec = Path(argv[0])
    job = StageJob.read(spec)
    os.environ.update(job.env)
    _threads(job)
    started = time.time()
    print(f"job {job.id}: {job.title} on {os.uname().nodename}, CUDA_VISIBLE_DEVICES="
          f"{os.environ.get('CUDA_VISIBLE_DEVICES', '')}, rank {os.environ.get('RANK', '0')} of "
          f"{os.environ.get('WORLD_SIZE', '1')}, Python {sys.executable}", flush=True)
    run_job(job)
    if int(os.environ.get("RANK", "0")) == 0:
        WorkerReport.here(job.id, int(os.environ.get("WORLD_SIZE", "1")), started, time.time()).write(spec)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(_main(sys.argv[1:]))
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the runner says it once, for all
        sys.exit(130)
