"""The experiment grid: every run of the lab, collected into tidy tables.

Four families of runs, all from the same old-task-correct start (see `captrack.theory.simulate`):
forward KL for every (separation, dimension, replay fraction, seed); reverse KL with reparameterised
gradients for every (separation, dimension, seed); reverse KL with score-function gradients, small
batches and a rare old mode, with and without replay; and repeated single-batch gradient estimates
at a perturbed learner, with and without replay.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

import pandas as pd

from captrack.theory.replay import replay_estimator_check
from captrack.theory.simulate import Run, Setup, Training, simulate

__all__ = ["FORWARD", "REVERSE", "Grid", "Results", "run_grid"]

T = TypeVar("T")

FORWARD = Training(objective="forward", steps=2000, batch=256, lr=1.0)
"""Forward-KL defaults: SGD at step 1 (the old weight then decays like 1/step once the modes separate)."""

REVERSE = Training(objective="reverse", estimator="reparam", steps=1000, batch=256, lr=0.3)
"""Reverse-KL defaults: a smaller step so the peak drift follows the gradient flow, not one big step."""


@dataclass(frozen=True)
class Grid:
    """What to run.

    Attributes:
        separations: Mahalanobis mode gaps √(Δᵀ Σ⁻¹ Δ).
        dims: dimensions.
        replays: forward-KL replay fractions (0 is always run).
        seeds: seeds; each run of the grid is repeated once per seed.
        forward: forward-KL training settings (its replay is overridden by `replays`).
        reverse: reverse-KL training settings (reparameterised gradients, no replay).
        rare_old_weight: the learner's initial old weight in the small-batch reverse-KL runs and the
            old weight of the estimator check (a rare old mode).
        rare_target_weight: the target's old weight π in the small-batch reverse-KL runs.
        rare_batch: batch size of those runs and of the estimator check.
        rare_separation: mode gap of those runs and of the estimator check.
        reverse_replay: replay fraction compared with none in those runs.
        n_batches: batches per estimator check.
    """

    separations: tuple[float, ...] = (2.0, 3.0, 4.0, 5.0, 6.0)
    dims: tuple[int, ...] = (1, 2, 8)
    replays: tuple[float, ...] = (0.0, 0.1, 0.3)
    seeds: tuple[int, ...] = (0, 1, 2)
    forward: Training = FORWARD
    reverse: Training = REVERSE
    rare_old_weight: float = 0.05
    rare_target_weight: float = 0.1
    rare_batch: int = 16
    rare_separation: float = 4.0
    reverse_replay: float = 0.25
    n_batches: int = 4000

    @classmethod
    def quick(cls) -> Grid:
        """A smaller grid for smoke tests: two dimensions, one seed, shorter training."""
        return cls(dims=(1, 2), replays=(0.0, 0.2), seeds=(0,),
                   forward=replace(FORWARD, steps=1500), reverse=replace(REVERSE, steps=800),
                   n_batches=2000)


@dataclass(frozen=True)
class Results:
    """All tables of one lab run.

    Attributes:
        runs: one row per training run (final and peak values).
        trajectories: one row per recorded step of every run.
        estimator: one row per estimator check (reverse-KL replay).
    """

    runs: pd.DataFrame
    trajectories: pd.DataFrame
    estimator: pd.DataFrame


def _run_row(run: Run) -> dict[str, Any]:
    """The summary row of one run."""
    s, t = run.setup, run.training
    return {
        "objective": t.objective, "estimator": t.estimator if t.objective == "reverse" else "mle",
        "replay": t.replay, "dim": s.dim, "separation": s.separation, "delta_sq": s.separation**2,
        "seed": s.seed, "bc_modes": math.exp(-(s.separation**2) / 8.0),
        "optimum_old_weight": run.optimum_old_weight, "final_old_weight": float(run.old_weight[-1]),
        "final_old_mass": float(run.old_mass[-1]),
        "max_weight_deviation": float(abs(run.old_weight - run.optimum_old_weight).max()),
        "peak_old_drift": run.peak_old_drift, "final_old_drift": float(run.old_drift[-1]),
        "final_new_error": float(run.new_error[-1]), "min_bc": float(run.bc.min()),
        "starved_share": run.starved_share, "steps": t.steps, "batch": t.batch, "lr": t.lr,
    }


def _trajectory(run: Run) -> pd.DataFrame:
    """The recorded steps of one run, with the run's keys as columns."""
    s, t = run.setup, run.training
    return pd.DataFrame({
        "objective": t.objective, "estimator": t.estimator if t.objective == "reverse" else "mle",
        "replay": t.replay, "dim": s.dim, "separation": s.separation, "seed": s.seed, "step": run.step,
        "old_weight": run.old_weight, "old_mass": run.old_mass, "old_drift": run.old_drift,
        "new_error": run.new_error, "bc": run.bc,
    })


def _jobs(grid: Grid) -> Iterator[tuple[Setup, Training]]:
    """Every (setup, training) pair of the grid, in a fixed order."""
    replays = sorted({0.0, *grid.replays})
    for dim, sep, seed in itertools.product(grid.dims, grid.separations, grid.seeds):
        for rho in replays:
            yield Setup(separation=sep, dim=dim, seed=seed), replace(grid.forward, replay=rho)
        yield Setup(separation=sep, dim=dim, seed=seed), grid.reverse
    score = Training(objective="reverse", estimator="score", steps=grid.reverse.steps * 2,
                     batch=grid.rare_batch, lr=grid.reverse.lr)
    for dim, seed, rho in itertools.product(grid.dims, grid.seeds, (0.0, grid.reverse_replay)):
        setup = Setup(separation=grid.rare_separation, dim=dim, old_weight=grid.rare_old_weight,
                      target_old_weight=grid.rare_target_weight, seed=seed)
        yield setup, replace(score, replay=rho)


def _identity(items: Iterable[T], total: int) -> Iterable[T]:
    """No progress display."""
    return items


def run_grid(grid: Grid, progress: bool = False) -> Results:
    """Run every experiment of `grid`.

    Args:
        grid: what to run.
        progress: show a progress bar (rich) while running.
    """
    show: Callable[[Iterable[Any], int], Iterable[Any]] = _identity
    if progress:
        from rich.progress import track

        def show(items: Iterable[Any], total: int) -> Iterable[Any]:
            return track(items, total=total, description="theory lab")

    jobs = list(_jobs(grid))
    runs = [simulate(setup, training) for setup, training in show(jobs, len(jobs))]
    checks = []
    for dim, seed, rho in itertools.product(grid.dims, grid.seeds, (0.0, grid.reverse_replay)):
        setup = Setup(separation=grid.rare_separation, dim=dim, old_weight=grid.rare_old_weight, seed=seed)
        check = replay_estimator_check(setup, rho, batch=grid.rare_batch, n_batches=grid.n_batches)
        checks.append({"dim": dim, "seed": seed, "separation": grid.rare_separation,
                       "old_weight": grid.rare_old_weight, **asdict(check)})
    return Results(pd.DataFrame([_run_row(r) for r in runs]),
                   pd.concat([_trajectory(r) for r in runs], ignore_index=True), pd.DataFrame(checks))
