"""Two-component Gaussian mixtures with a shared covariance, and the gradients of both KL objectives.

All computation happens in whitened coordinates (shared covariance = identity). With the mean
updates preconditioned by the covariance (the Fisher information of a Gaussian mean), training is
affine invariant, so this loses no generality: distances are Mahalanobis distances and the mean gap
Δ of the paper enters only through Δᵀ Σ⁻¹ Δ. Densities are left unnormalised by the constant both
components share; it cancels in responsibilities and in log q − log p.

The learner is q = w·N(μ_old, I) + (1 − w)·N(μ_new, I), parameterised by η = logit(w), μ_old, μ_new.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Gradient",
    "Mixture",
    "bhattacharyya",
    "forward_kl_gradient",
    "log_density",
    "reverse_kl_gradient_reparam",
    "reverse_kl_gradient_score",
]

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Mixture:
    """A two-component mixture with identity covariance: the old mode and the new mode."""

    old_weight: float
    old_mean: Array
    new_mean: Array

    @property
    def logit(self) -> float:
        """η = log(w / (1 − w)), the unconstrained old-weight parameter."""
        return math.log(self.old_weight) - math.log1p(-self.old_weight)

    def step(self, grad: Gradient, lr: float) -> Mixture:
        """One gradient-descent step of size `lr` on (η, μ_old, μ_new)."""
        eta = self.logit - lr * grad.logit
        return Mixture(_sigmoid(eta), self.old_mean - lr * grad.old_mean, self.new_mean - lr * grad.new_mean)

    def sample(self, n: int, rng: np.random.Generator) -> tuple[Array, NDArray[np.bool_]]:
        """`n` draws and whether each came from the old component (ancestral sampling)."""
        is_old = rng.random(n) < self.old_weight
        centres = np.where(is_old[:, None], self.old_mean, self.new_mean)
        return centres + rng.standard_normal((n, self.old_mean.size)), is_old


@dataclass(frozen=True)
class Gradient:
    """Gradient of a loss with respect to (η, μ_old, μ_new)."""

    logit: float
    old_mean: Array
    new_mean: Array


def bhattacharyya(mean_a: Array, mean_b: Array, cov: Array | None = None) -> float:
    """Bhattacharyya coefficient of N(mean_a, Σ) and N(mean_b, Σ): exp(−Δᵀ Σ⁻¹ Δ / 8).

    Args:
        mean_a: first mean.
        mean_b: second mean.
        cov: the shared covariance Σ (identity when None).
    """
    gap = np.atleast_1d(np.asarray(mean_a, dtype=float) - np.asarray(mean_b, dtype=float))
    quad = float(gap @ gap) if cov is None else float(gap @ np.linalg.solve(np.atleast_2d(cov), gap))
    return math.exp(-quad / 8.0)


def _sigmoid(z: float) -> float:
    """Numerically safe logistic function, kept inside the open interval (0, 1)."""
    value = 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))
    return min(max(value, 1e-300), 1.0 - 1e-16)


def log_density(model: Mixture, x: Array) -> tuple[Array, Array]:
    """Unnormalised log q(x) and the old component's responsibility r_old(x), per row of `x`."""
    a = math.log(model.old_weight) - 0.5 * np.sum((x - model.old_mean) ** 2, axis=1)
    b = math.log1p(-model.old_weight) - 0.5 * np.sum((x - model.new_mean) ** 2, axis=1)
    top = np.maximum(a, b)
    log_q = top + np.log(np.exp(a - top) + np.exp(b - top))
    return log_q, np.exp(a - log_q)


def _score_terms(model: Mixture, x: Array) -> tuple[Array, Array, Array]:
    """Per-sample ∇ log q(x) with respect to η, μ_old and μ_new."""
    _, r_old = log_density(model, x)
    return r_old - model.old_weight, r_old[:, None] * (x - model.old_mean), (1 - r_old)[:, None] * (x - model.new_mean)


def forward_kl_gradient(model: Mixture, data: Array) -> Gradient:
    """Gradient of the negative mean log-likelihood of `data` (forward KL up to a constant)."""
    d_logit, d_old, d_new = _score_terms(model, data)
    return Gradient(-float(d_logit.mean()), -d_old.mean(axis=0), -d_new.mean(axis=0))


def _grad_x_log_density(model: Mixture, x: Array) -> Array:
    """∇ₓ log q(x) per row: −Σ_k r_k(x)(x − μ_k)."""
    _, r_old = log_density(model, x)
    return -(r_old[:, None] * (x - model.old_mean) + (1 - r_old)[:, None] * (x - model.new_mean))


def reverse_kl_gradient_reparam(model: Mixture, target: Mixture, eps_old: Array, eps_new: Array) -> Gradient:
    """Gradient of KL(q ‖ p) with the component sum done exactly and each component reparameterised.

    KL = w·E[f(μ_old + ε)] + (1 − w)·E[f(μ_new + ε)] with f = log q − log p. The score term
    E_q[∇ log q] (zero in expectation) is dropped ("sticking the landing", Roeder et al. 2017), so the
    estimate is exactly zero once q = p, and its noise on μ_old is gated by the overlap of the modes.

    Args:
        model: the learner q.
        target: the target p.
        eps_old: standard normal draws for the old component, shape (n, d).
        eps_new: standard normal draws for the new component, shape (n, d).
    """
    x_old, x_new = model.old_mean + eps_old, model.new_mean + eps_new
    f_old = log_density(model, x_old)[0] - log_density(target, x_old)[0]
    f_new = log_density(model, x_new)[0] - log_density(target, x_new)[0]
    g_old = _grad_x_log_density(model, x_old) - _grad_x_log_density(target, x_old)
    g_new = _grad_x_log_density(model, x_new) - _grad_x_log_density(target, x_new)
    w = model.old_weight
    return Gradient(w * (1 - w) * float(f_old.mean() - f_new.mean()), w * g_old.mean(axis=0), (1 - w) * g_new.mean(axis=0))


def reverse_kl_gradient_score(model: Mixture, target: Mixture, x: Array, weights: Array) -> Gradient:
    """Score-function (REINFORCE) gradient of KL(q ‖ p) from importance-weighted samples.

    ∇ KL = E_m[(q/m)(x) · f(x) · ∇ log q(x)] for any proposal m covering q; `weights` are q/m
    (all ones for on-policy samples). The E_q[∇ log q] term is dropped as above.

    Args:
        model: the learner q.
        target: the target p.
        x: samples from the proposal m, shape (n, d).
        weights: importance weights q(x)/m(x), shape (n,).
    """
    f = (log_density(model, x)[0] - log_density(target, x)[0]) * weights
    d_logit, d_old, d_new = _score_terms(model, x)
    return Gradient(float((f * d_logit).mean()), (f[:, None] * d_old).mean(axis=0), (f[:, None] * d_new).mean(axis=0))
