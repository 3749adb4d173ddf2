"""Replay under reverse KL: same population gradient, no starved batches, bounded importance weights.

With on-policy sampling a batch of B draws holds no old-mode sample with probability (1 − w)^B, so
when the old weight w is small most batches carry no information about the old component. Replay
mixes a fraction ρ of old-task draws into every batch and weights each draw by q/m, where
m = (1 − ρ)·q + ρ·p_old is the proposal; the weights are at most 1/(1 − ρ), the expected gradient is
unchanged, and the old component is seen in every batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from captrack.theory.mixture import Mixture, log_density, reverse_kl_gradient_score
from captrack.theory.simulate import Setup, geometry

__all__ = ["EstimatorCheck", "replay_estimator_check"]


@dataclass(frozen=True)
class EstimatorCheck:
    """Statistics of the score-function gradient on the old mean over many independent batches.

    Attributes:
        replay: replay fraction ρ.
        batch: draws per batch.
        mean_gradient: mean over batches of the gradient's component along the perturbation.
        std_error: standard error of that mean.
        std_gradient: standard deviation of that component across batches.
        starved_share: share of batches without a single old-mode draw.
        max_weight: the largest importance weight seen (bound: 1/(1 − ρ)).
    """

    replay: float
    batch: int
    mean_gradient: float
    std_error: float
    std_gradient: float
    starved_share: float
    max_weight: float


def replay_estimator_check(setup: Setup, replay: float, batch: int = 16, n_batches: int = 4000,
                           perturbation: float = 0.5) -> EstimatorCheck:
    """Sample the reverse-KL score-function gradient on μ_old at a perturbed learner.

    The learner sits on the target except that its old mean is displaced by `perturbation` (in a
    direction orthogonal to the mode gap when d ≥ 2), so the true gradient on μ_old is non-zero.
    Old weight: the setup's `old_weight` for both learner and target.

    Args:
        setup: separation, dimension, old weight and seed.
        replay: replay fraction ρ in [0, 1).
        batch: draws per batch.
        n_batches: independent batches.
        perturbation: displacement of the learner's old mean.
    """
    old, new, new_start = geometry(setup)
    direction = (new_start - new) / np.linalg.norm(new_start - new)
    target = Mixture(setup.old_weight, old, new)
    model = Mixture(setup.old_weight, old + perturbation * direction, new.copy())
    rng = np.random.default_rng([setup.seed, 23, round(replay * 1000)])
    n_old = round(replay * batch)
    rho = n_old / batch
    grads, starved, max_weight = np.empty(n_batches), 0, 1.0
    for i in range(n_batches):
        x_q, from_old = model.sample(batch - n_old, rng)
        x = np.vstack([old + rng.standard_normal((n_old, setup.dim)), x_q])
        log_m_old = -0.5 * np.sum((x - old) ** 2, axis=1) - log_density(model, x)[0]
        weights = 1.0 / ((1.0 - rho) + rho * np.exp(log_m_old))
        max_weight = max(max_weight, float(weights.max()))
        starved += n_old == 0 and not bool(from_old.any())
        grads[i] = float(reverse_kl_gradient_score(model, target, x, weights).old_mean @ direction)
    std = float(grads.std(ddof=1))
    return EstimatorCheck(replay, batch, float(grads.mean()), std / np.sqrt(n_batches), std,
                          starved / n_batches, max_weight)
