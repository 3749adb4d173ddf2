"""The ``captrack run`` command line: its options and what it does with them (captrack.cli registers it)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_run_parser", "cmd_run"]


def add_run_parser(sub: Any) -> None:
    """Add ``captrack run`` to the sub-command parsers `sub`."""
    from captrack.cli_parser import FAIL_ON_HELP
    from captrack.gate.cli import add_gate_options

    run = sub.add_parser("run", help="run an experiment end to end (no argument: the embedded demo)")
    run.add_argument("experiment", nargs="?", help="EXPERIMENT.yaml (default: leaderboards/demo/experiment.yaml)")
    run.add_argument("--quick", action="store_true", help="few items and training steps, own workdir (smoke test)")
    run.add_argument("--dry-run", action="store_true", help="print the plan: which stages would run or be reused")
    run.add_argument("--fail-on", choices=["regressed", "inconclusive"], default=None,
                     help=f"{FAIL_ON_HELP}. It checks the board's comparisons: a bad checkpoint stops a training pipeline")
    add_gate_options(run)
    run.add_argument("--wait", action="store_true",
                     help="when another `captrack run` holds the work folder, wait for it instead of refusing")
    run.add_argument("--executor", metavar="NAME", default=None,
                     help="where the trainings and evaluations run: local (this node: worker processes, packed onto its "
                          "GPUs) or slurm; default: the experiment's executor: block, else local")
    run.add_argument("--detach", action="store_true",
                     help="hand the jobs to the executor (slurm: submit them), say how to watch them, and return; the "
                          "same `captrack run` again re-attaches to them and finishes")
    run.add_argument("--dtype", choices=["auto", "bfloat16", "float32", "float16"], default=None,
                     help="every checkpoint's dtype and every training's bfloat16 autocast, over the experiment's dtype: "
                          "auto is bfloat16 where the hardware has bfloat16 arithmetic (a CUDA GPU, a CPU with AMX or "
                          "AVX512-BF16), else float32 (the demo's default)")
    run.add_argument("--prepare", action="store_true",
                     help="fetch on this host what the jobs would need the network for (hub models and tokenizers, "
                          "official task data) into the Hugging Face cache (HF_HOME) they read, build every task once, "
                          "and return; with HF_HUB_OFFLINE=1 a run missing any of it is refused before it submits")
    run.add_argument("--status", action="store_true",
                     help="list every stage with its state, executor, job id, host and GPU-hours, and return (runs nothing)")
    run.set_defaults(func=cmd_run)


def _experiment(args: argparse.Namespace) -> Any:
    from captrack.pipeline.experiment import load_experiment
    from captrack.pipeline.layout import default_workdir
    from captrack.pipeline.quick_run import demo_experiment, quick

    if args.experiment:
        experiment = load_experiment(args.experiment)  # its paths are relative to the experiment file
    else:  # the embedded demo writes under the current folder, never into the installed package
        import dataclasses

        experiment = load_experiment(demo_experiment())
        experiment = dataclasses.replace(experiment, workdir=default_workdir(Path.cwd(), "demo"),
                                         leaderboard=Path.cwd() / "leaderboards" / "demo")
    experiment = quick(experiment) if args.quick else experiment  # --quick: its own work folder, announced below
    return _with_dtype(experiment, args.dtype)


def _with_dtype(experiment: Any, requested: str | None) -> Any:
    """`experiment` in `--dtype` (else its own ``dtype:``) where one is asked, the choice said once, here."""
    from captrack.pipeline.dtype_choice import apply_dtype, choose_dtype

    requested = requested or experiment.dtype
    if requested is None:
        return experiment
    choice = choose_dtype(requested)
    print(f"dtype {choice.dtype} for every evaluation and training ({choice.reason}; --dtype overrides)", flush=True)
    return apply_dtype(experiment, choice)


def cmd_run(args: argparse.Namespace) -> int:
    """``captrack run [EXPERIMENT] [...]``: run it (or, with --status, list its stages); the exit status."""
    from captrack.processes import prepare_openmp

    prepare_openmp()  # before anything starts torch's thread pool
    from rich.console import Console

    from captrack.gate.cli import gate_comparisons, wants_gate
    from captrack.pipeline.runner import run_experiment

    experiment = _experiment(args)
    console = Console(soft_wrap=True)  # a log file or pipe: long paths and names are never broken mid-word
    console.print(f"experiment {experiment.source}: work folder {experiment.workdir}, leaderboard {experiment.leaderboard}",
                  highlight=False, markup=False)
    if args.status:
        from captrack.pipeline.status import print_status

        print_status(experiment, console)
        return 0
    from captrack.pipeline.prepare import check_prepared, prepare

    if args.prepare:
        prepare(experiment, console)
        return 0
    check_prepared(experiment)  # offline here and in the jobs: what they would fetch is refused before any submission
    shown: list[Any] = []  # this run's comparisons (what its board shows): the gate reads these, never a file
    timings = run_experiment(experiment, dry_run=args.dry_run, console=console, wait=args.wait,
                             board=shown if wants_gate(args) else None, executor=args.executor, detach=args.detach)
    if args.detach and not args.dry_run and _jobs_out(experiment):
        console.print(f"detached with jobs still out: `captrack run {experiment.source} --status` lists every stage; "
                      "the same `captrack run` again re-attaches to them and finishes", highlight=False, markup=False)
        return 0
    if not args.dry_run:
        for title, seconds in timings.items():
            console.print(f"  {seconds:7.1f} s  {title}", highlight=False, markup=False)
        board = experiment.leaderboard
        console.print(f"leaderboard: {board / 'index.html'} (open it in a browser; {board / 'README.md'} is the same "
                      "in Markdown)", highlight=False, markup=False)
        return gate_comparisons(console, [c for c, _ in shown], args)
    return 0


def _jobs_out(experiment: Any) -> bool:
    """Whether a job of this work folder is still queued or running by its driver's record (a detached run)."""
    from captrack.pipeline.executors import JobRecord

    records = [JobRecord.read(experiment.work, p.name.removesuffix(".record.json"))
               for p in experiment.work.jobs.glob("*.record.json")]
    return any(r is not None and r.state in ("queued", "running") for r in records)
