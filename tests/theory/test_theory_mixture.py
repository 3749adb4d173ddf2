"""The mixture's densities and gradient estimators against quadrature and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest

from captrack.theory.mixture import (
    Mixture,
    bhattacharyya,
    forward_kl_gradient,
    log_density,
    reverse_kl_gradient_reparam,
    reverse_kl_gradient_score,
)
from captrack.theory.simulate import Setup, Training, geometry, old_mass

LEARNER = Mixture(0.6, np.array([0.3]), np.array([3.4]))
TARGET = Mixture(0.5, np.array([0.0]), np.array([4.0]))


def _params(m: Mixture) -> np.ndarray:
    return np.array([m.logit, m.old_mean[0], m.new_mean[0]])


def _mixture(theta: np.ndarray) -> Mixture:
    return Mixture(1.0 / (1.0 + math.exp(-theta[0])), theta[1:2].copy(), theta[2:3].copy())


def _numeric_gradient(loss, m: Mixture, h: float = 1e-5) -> np.ndarray:
    theta = _params(m)
    grad = np.zeros(3)
    for i in range(3):
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        grad[i] = (loss(_mixture(up)) - loss(_mixture(down))) / (2 * h)
    return grad


def _kl_by_quadrature(q: Mixture) -> float:
    """KL(q ‖ TARGET) in one dimension on a fine grid."""
    x = np.linspace(-12.0, 16.0, 40001)[:, None]
    log_q, _ = log_density(q, x)
    log_p, _ = log_density(TARGET, x)
    dens = np.exp(log_q) / math.sqrt(2 * math.pi)
    return float(np.trapezoid(dens * (log_q - log_p), x[:, 0]))


def _as_vector(g) -> np.ndarray:
    return np.array([g.logit, g.old_mean[0], g.new_mean[0]])


def test_forward_gradient_matches_finite_differences() -> None:
    data = np.random.default_rng(0).normal(4.0, 1.0, size=(500, 1))
    loss = lambda m: -float(log_density(m, data)[0].mean())  # noqa: E731
    np.testing.assert_allclose(_as_vector(forward_kl_gradient(LEARNER, data)), _numeric_gradient(loss, LEARNER),
                               rtol=1e-5, atol=1e-8)


def test_reparameterised_reverse_gradient_is_unbiased() -> None:
    exact = _numeric_gradient(_kl_by_quadrature, LEARNER)
    eps = np.random.default_rng(1).standard_normal((2, 400_000, 1))
    estimate = _as_vector(reverse_kl_gradient_reparam(LEARNER, TARGET, eps[0], eps[1]))
    np.testing.assert_allclose(estimate, exact, rtol=0.03, atol=2e-3)


@pytest.mark.parametrize("replay", [0.0, 0.3])
def test_score_reverse_gradient_is_unbiased_with_and_without_replay(replay: float) -> None:
    exact = _numeric_gradient(_kl_by_quadrature, LEARNER)
    rng = np.random.default_rng(2)
    n, n_old = 400_000, round(replay * 400_000)
    x_q, _ = LEARNER.sample(n - n_old, rng)
    x = np.vstack([rng.standard_normal((n_old, 1)), x_q])
    log_ratio = -0.5 * x[:, 0] ** 2 - log_density(LEARNER, x)[0]
    weights = 1.0 / ((1 - replay) + replay * np.exp(log_ratio))
    assert weights.max() <= 1.0 / (1.0 - replay) + 1e-12
    estimate = _as_vector(reverse_kl_gradient_score(LEARNER, TARGET, x, weights))
    np.testing.assert_allclose(estimate, exact, rtol=0.06, atol=4e-3)


def test_reverse_gradients_vanish_at_the_target() -> None:
    eps = np.random.default_rng(3).standard_normal((2, 64, 1))
    g = reverse_kl_gradient_reparam(TARGET, TARGET, eps[0], eps[1])
    assert g.logit == 0.0 and not g.old_mean.any() and not g.new_mean.any()


def test_bhattacharyya_matches_its_integral_and_uses_the_covariance() -> None:
    x = np.linspace(-10, 14, 20001)
    a, b = np.exp(-0.5 * x**2), np.exp(-0.5 * (x - 2.5) ** 2)
    integral = float(np.trapezoid(np.sqrt(a * b), x)) / math.sqrt(2 * math.pi)
    assert bhattacharyya(np.array([0.0]), np.array([2.5])) == pytest.approx(integral, rel=1e-6)
    cov = np.diag([4.0, 1.0])
    assert bhattacharyya(np.zeros(2), np.array([2.0, 0.0]), cov) == pytest.approx(math.exp(-1 / 8))
    assert bhattacharyya(np.ones(3), np.ones(3)) == 1.0


def test_old_mass_reads_the_weight_and_counts_an_absorbed_component_as_lost() -> None:
    old, new = np.zeros(2), np.array([3.0, 0.0])
    assert old_mass(Mixture(0.3, old, new), old, new) == pytest.approx(0.3)
    assert old_mass(Mixture(0.3, new.copy(), new), old, new) == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_geometry_places_the_modes_at_the_requested_separation(dim: int) -> None:
    setup = Setup(separation=3.5, dim=dim, new_offset=1.0)
    old, new, start = geometry(setup)
    assert np.linalg.norm(new - old) == pytest.approx(3.5)
    assert np.linalg.norm(start - new) == pytest.approx(1.0)
    if dim > 1:
        assert float((start - new) @ (new - old)) == pytest.approx(0.0, abs=1e-12)


def test_reverse_kl_replay_requires_sampled_gradients() -> None:
    with pytest.raises(ValueError, match="estimator='score'"):
        Training(objective="reverse", estimator="reparam", replay=0.2)
    with pytest.raises(ValueError, match="replay fraction"):
        Training(objective="forward", replay=1.0)


@pytest.mark.parametrize("kwargs", [{"separation": 0.0}, {"dim": 0}, {"old_weight": 1.0}, {"target_old_weight": 0.0}])
def test_setup_rejects_impossible_problems(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        Setup(**kwargs)
