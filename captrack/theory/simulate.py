"""Train the two-mode learner from an old-task-correct start under forward or reverse KL.

Geometry (whitened coordinates): the old mode sits at a = 0 and the new mode at b = Δ·e for a
seeded unit vector e. The learner starts old-task-correct: μ_old = a, old weight w₀, and its new
component at b + s·u, a Mahalanobis distance s from the new mode (u ⊥ e when d ≥ 2, so the start is
Δ² + s² from the old mode; u = e, away from the old mode, when d = 1).

- Forward KL (SFT): maximum likelihood on fresh minibatches of the training mixture
  (1 − ρ)·N(b, I) + ρ·N(a, I), where ρ is the replay fraction (exactly round(ρ·B) replayed rows).
  Its population optimum is the training mixture itself: old weight ρ.
- Reverse KL (RL-like, on-policy): minimise KL(q ‖ p) to the target p = π·N(a, I) + (1 − π)·N(b, I),
  the mixture that still holds the old mode with weight π (the learner's own old weight by default:
  post-training should add the new behaviour, not remove the old one). Gradients come from samples
  of the learner, either per-component reparameterised or by the score function; with replay
  fraction ρ the score-function batch mixes round(ρ·B) old-task draws into the on-policy draws,
  importance-weighted by q/m ≤ 1/(1 − ρ), which leaves the population objective unchanged.

Plain SGD (no Adam: adaptive steps would amplify the tiny overlap-gated gradient on μ_old) with a
cosine-decayed step size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from captrack.theory.mixture import (
    Gradient,
    Mixture,
    bhattacharyya,
    forward_kl_gradient,
    log_density,
    reverse_kl_gradient_reparam,
    reverse_kl_gradient_score,
)

__all__ = ["Run", "Setup", "Training", "geometry", "old_mass", "simulate"]

Objective = Literal["forward", "reverse"]
Estimator = Literal["reparam", "score"]


@dataclass(frozen=True)
class Setup:
    """The problem: mode separation, dimension and the learner's start.

    Attributes:
        separation: Mahalanobis gap √(Δᵀ Σ⁻¹ Δ) between the old and the new mode.
        dim: dimension d.
        old_weight: the learner's initial old weight w₀.
        target_old_weight: π, the old weight of the reverse-KL target (w₀ when None).
        new_offset: s, the Mahalanobis distance of the learner's initial new mean from the new mode.
        seed: seeds the geometry and all sampling.
    """

    separation: float = 4.0
    dim: int = 2
    old_weight: float = 0.5
    target_old_weight: float | None = None
    new_offset: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.separation <= 0 or self.dim < 1 or self.new_offset < 0:
            raise ValueError("separation must be > 0, dim >= 1 and new_offset >= 0")
        for name in ("old_weight", "target_old_weight"):
            value = getattr(self, name)
            if value is not None and not 0.0 < value < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {value}")

    @property
    def pi_old(self) -> float:
        """The reverse-KL target's old weight π."""
        return self.old_weight if self.target_old_weight is None else self.target_old_weight


@dataclass(frozen=True)
class Training:
    """How the learner is trained.

    Attributes:
        objective: "forward" (maximum likelihood on data) or "reverse" (KL(q ‖ p) on own samples).
        estimator: reverse-KL gradient estimator, "reparam" or "score" (ignored for forward KL).
        replay: fraction ρ of each batch drawn from the old task.
        steps: SGD steps.
        batch: samples per step (per component for the reparameterised estimator).
        lr: initial step size; cosine-decayed to `lr_final_frac`·lr.
        lr_final_frac: final step size as a fraction of `lr`.
        checkpoints: roughly how many log-spaced steps to record.
    """

    objective: Objective = "reverse"
    estimator: Estimator = "reparam"
    replay: float = 0.0
    steps: int = 2000
    batch: int = 256
    lr: float = 1.0
    lr_final_frac: float = 0.02
    checkpoints: int = 40

    def __post_init__(self) -> None:
        if not 0.0 <= self.replay < 1.0:
            raise ValueError(f"replay fraction must be in [0, 1), got {self.replay}")
        if self.objective == "reverse" and self.estimator == "reparam" and self.replay > 0:
            raise ValueError("replay needs sampled gradients: use estimator='score' for reverse KL with replay")
        if self.steps < 1 or self.batch < 1:
            raise ValueError("steps and batch must be positive")


@dataclass(frozen=True)
class Run:
    """One training run: the recorded trajectory and the final learner.

    Attributes:
        setup: the problem.
        training: the training settings.
        step: recorded steps (0 = start).
        old_weight: learner's old weight at each recorded step.
        old_mass: the learner's effective old-mode mass at each recorded step (see `old_mass`).
        old_drift: Mahalanobis distance ‖μ_old − a‖ at each recorded step.
        new_error: Mahalanobis distance ‖μ_new − b‖ at each recorded step.
        bc: Bhattacharyya coefficient between the learner's two components at each recorded step.
        peak_old_drift: the largest old drift over all steps (not only recorded ones).
        starved_share: share of batches without a single old-mode sample (always 0 for the
            reparameterised estimator, which sums over the components exactly).
        final: the learner after the last step.
    """

    setup: Setup
    training: Training
    step: NDArray[np.int64]
    old_weight: NDArray[np.float64]
    old_mass: NDArray[np.float64]
    old_drift: NDArray[np.float64]
    new_error: NDArray[np.float64]
    bc: NDArray[np.float64]
    peak_old_drift: float
    starved_share: float
    final: Mixture = field(repr=False)

    @property
    def optimum_old_weight(self) -> float:
        """The old weight at the population optimum: ρ for forward KL, π for reverse KL."""
        return self.training.replay if self.training.objective == "forward" else self.setup.pi_old


def geometry(setup: Setup) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Old mode a, new mode b and the learner's initial new mean, from the setup's seed."""
    rng = np.random.default_rng([setup.seed, setup.dim, 7])
    e = rng.standard_normal(setup.dim)
    e /= np.linalg.norm(e)
    u = e.copy()
    if setup.dim > 1:
        u = rng.standard_normal(setup.dim)
        u -= (u @ e) * e
        u /= np.linalg.norm(u)
    old, new = np.zeros(setup.dim), setup.separation * e
    return old, new, new + setup.new_offset * u


def _phi(z: float) -> float:
    """Standard normal CDF."""
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def old_mass(model: Mixture, old: NDArray[np.float64], new: NDArray[np.float64]) -> float:
    """The learner's effective old-mode mass: its weight on the old mode, read off from its samples.

    P_q(H) is the learner's probability of the old mode's half-space H (the side of the bisector of
    a and b that holds a). A mixture of components sitting exactly on a and b with old weight w has
    P_q(H) = w·Φ(Δ/2) + (1 − w)·Φ(−Δ/2); inverting that map gives a weight that also counts an old
    component which has wandered into the new mode as lost, where the mixture weight alone cannot.

    Args:
        model: the learner.
        old: the old mode a.
        new: the new mode b.
    """
    gap = new - old
    sep = float(np.linalg.norm(gap))
    e, mid = gap / sep, (old + new) / 2.0
    p_half = model.old_weight * _phi(-float(e @ (model.old_mean - mid)))
    p_half += (1.0 - model.old_weight) * _phi(-float(e @ (model.new_mean - mid)))
    return (p_half - _phi(-sep / 2.0)) / (_phi(sep / 2.0) - _phi(-sep / 2.0))


def _checkpoints(steps: int, count: int) -> set[int]:
    """Roughly `count` log-spaced steps in [0, steps], always including both ends."""
    grid = np.unique(np.round(np.geomspace(1, steps, max(count - 1, 1))).astype(int))
    return {0, steps, *grid.tolist()}


def _lr(training: Training, t: int) -> float:
    """Cosine-decayed step size at step t."""
    cos = 0.5 * (1.0 + math.cos(math.pi * t / training.steps))
    return training.lr * (training.lr_final_frac + (1.0 - training.lr_final_frac) * cos)


def _forward_step(model: Mixture, old: NDArray[np.float64], new: NDArray[np.float64],
                  training: Training, rng: np.random.Generator) -> tuple[Gradient, bool]:
    """Forward-KL gradient on a fresh batch of the training mixture; and whether it had no old rows."""
    n_old = round(training.replay * training.batch)
    centres = np.vstack([np.tile(old, (n_old, 1)), np.tile(new, (training.batch - n_old, 1))])
    data = centres + rng.standard_normal(centres.shape)
    return forward_kl_gradient(model, data), n_old == 0


def _reverse_step(model: Mixture, target: Mixture, training: Training,
                  rng: np.random.Generator) -> tuple[Gradient, bool]:
    """Reverse-KL gradient from the learner's own samples (plus replay); and whether it was starved."""
    d = model.old_mean.size
    if training.estimator == "reparam":
        eps = rng.standard_normal((2, training.batch, d))
        return reverse_kl_gradient_reparam(model, target, eps[0], eps[1]), False
    n_old = round(training.replay * training.batch)
    x_q, from_old = model.sample(training.batch - n_old, rng)
    x = np.vstack([target.old_mean + rng.standard_normal((n_old, d)), x_q])
    weights = np.ones(len(x))
    if n_old:
        rho = n_old / training.batch
        log_q = log_density(model, x)[0]
        log_old = -0.5 * np.sum((x - target.old_mean) ** 2, axis=1)
        weights = 1.0 / ((1 - rho) + rho * np.exp(log_old - log_q))
    starved = n_old == 0 and not bool(from_old.any())
    return reverse_kl_gradient_score(model, target, x, weights), starved


def simulate(setup: Setup, training: Training) -> Run:
    """Train the learner from its old-task-correct start and record its trajectory."""
    old, new, new_start = geometry(setup)
    model = Mixture(setup.old_weight, old.copy(), new_start)
    target = Mixture(setup.pi_old, old, new)
    rng = np.random.default_rng([setup.seed, 11, int(training.objective == "reverse")])
    keep = _checkpoints(training.steps, training.checkpoints)
    rows: list[tuple[float, ...]] = []
    peak, starved = 0.0, 0
    for t in range(training.steps + 1):
        drift = float(np.linalg.norm(model.old_mean - old))
        peak = max(peak, drift)
        if t in keep:
            rows.append((t, model.old_weight, old_mass(model, old, new), drift,
                         float(np.linalg.norm(model.new_mean - new)), bhattacharyya(model.old_mean, model.new_mean)))
        if t == training.steps:
            break
        if training.objective == "forward":
            grad, empty = _forward_step(model, old, new, training, rng)
        else:
            grad, empty = _reverse_step(model, target, training, rng)
        starved += empty
        model = model.step(grad, _lr(training, t))
    cols = np.array(rows, dtype=float).T
    return Run(setup=setup, training=training, step=cols[0].astype(np.int64), old_weight=cols[1],
               old_mass=cols[2], old_drift=cols[3], new_error=cols[4], bc=cols[5], peak_old_drift=peak,
               starved_share=starved / training.steps, final=model)
