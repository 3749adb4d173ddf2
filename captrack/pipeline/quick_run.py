"""The embedded demo's manifest and `captrack run --quick`, the smoke-test version of an experiment."""

from __future__ import annotations

from pathlib import Path

from captrack.errors import InputError
from captrack.pipeline.experiment import Experiment, trained_steps
from captrack.pipeline.layout import WorkFolder

__all__ = ["QUICK_TASKS", "demo_experiment", "quick"]


def demo_experiment() -> Path:
    """The embedded demo's manifest (leaderboards/demo/experiment.yaml in a checkout)."""
    from captrack.paths import _CHECKOUT

    path = _CHECKOUT / "leaderboards" / "demo" / "experiment.yaml"
    if not path.is_file():
        raise InputError(
            f"the embedded demo ({path}) ships with the source checkout; clone captrack and run `make demo`, "
            "or pass your own EXPERIMENT.yaml"
        )
    return path


QUICK_TASKS = ("captrack_probe_c1_facts", "captrack_probe_c2_word_problems", "captrack_probe_w1_choice",
               "captrack_probe_h4_multiturn_choice")
"""What `--quick` evaluates when the experiment's tasks include them (the demo's do): CAN, WILL and HOW, option
loglikelihoods, a forced-choice contrast and a generation with short outputs, so the whole pipeline is exercised
in a few minutes on CPU."""


def quick(experiment: Experiment, limit: int = 3, steps: int = 2) -> Experiment:
    """A smoke-test version: few tasks, items and training steps, its own workdir and leaderboard."""
    import dataclasses
    from fnmatch import fnmatchcase

    workdir = experiment.workdir.with_name(experiment.workdir.name + "-quick")
    saves = {"save_steps": 1}  # a trajectory keeps a checkpoint per (quick) step
    variants = tuple(
        trained_steps(dataclasses.replace(v, train={**v.train, "steps": min(int(v.train.get("steps", steps)), steps),
                                                    "rows": min(int(v.train.get("rows", 16)), 16),
                                                    **(saves if "save_steps" in v.train else {})}), workdir,
                      str(experiment.source)) if v.train else v
        for v in experiment.variants
    )
    tasks = tuple(t for t in QUICK_TASKS if any(fnmatchcase(t, p) for p in experiment.tasks)) or experiment.tasks
    trained = sorted({v.name for v in experiment.variants if v.train})
    description = (f"A smoke test of experiment {experiment.name} (`captrack run --quick`): {len(tasks)} task(s), the "
                   f"first {limit} items of each" + (f", trained variants ({', '.join(trained)}) trained for at most {steps} "
                                                     "optimizer steps" if trained else "")
                   + ". It checks that every stage runs; its numbers support no claim about the checkpoints or the "
                   "algorithms. Run `captrack run` without --quick for the experiment's results.")
    return dataclasses.replace(experiment, variants=variants, tasks=tasks, limit=limit, items={}, workdir=workdir,
                               leaderboard=WorkFolder(workdir).quick_leaderboard, smoke=True,
                               title=f"Smoke test of {experiment.name} (--quick): not a result", description=description)


