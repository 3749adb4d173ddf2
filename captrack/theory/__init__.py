"""A simulation lab for mass forgetting vs old-component drift (Balasubramanian & Kasiviswanathan, 2026).

The learner is a two-component Gaussian mixture (old task, new task) with a shared covariance,
started old-task-correct and trained under forward KL (maximum likelihood on new-task data, optionally
with replay) or reverse KL (on its own samples, towards a target that keeps the old mode). The lab
records the old weight, the old mean's drift and the Bhattacharyya coefficient over training, and
checks the paper's claims numerically; `run_theory` writes the tables, figures and verdicts.
"""

from typing import TYPE_CHECKING

from captrack.lazy import lazy_getattr

if TYPE_CHECKING:  # imported on first use below, so `captrack --help` does not load the heavy modules
    from captrack.theory.claims import BC_SLOPE, Claim, DriftFit, evaluate_claims, fit_drift_slope
    from captrack.theory.experiments import Grid, Results, run_grid
    from captrack.theory.lab import claims_markdown, run_theory
    from captrack.theory.mixture import Mixture, bhattacharyya
    from captrack.theory.replay import EstimatorCheck, replay_estimator_check
    from captrack.theory.simulate import Run, Setup, Training, old_mass, simulate

_EXPORTS = {
    'BC_SLOPE': 'captrack.theory.claims',
    'Claim': 'captrack.theory.claims',
    'DriftFit': 'captrack.theory.claims',
    'evaluate_claims': 'captrack.theory.claims',
    'fit_drift_slope': 'captrack.theory.claims',
    'Grid': 'captrack.theory.experiments',
    'Results': 'captrack.theory.experiments',
    'run_grid': 'captrack.theory.experiments',
    'claims_markdown': 'captrack.theory.lab',
    'run_theory': 'captrack.theory.lab',
    'Mixture': 'captrack.theory.mixture',
    'bhattacharyya': 'captrack.theory.mixture',
    'EstimatorCheck': 'captrack.theory.replay',
    'replay_estimator_check': 'captrack.theory.replay',
    'Run': 'captrack.theory.simulate',
    'Setup': 'captrack.theory.simulate',
    'Training': 'captrack.theory.simulate',
    'old_mass': 'captrack.theory.simulate',
    'simulate': 'captrack.theory.simulate',
}


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

__all__ = [
    "BC_SLOPE",
    "Claim",
    "DriftFit",
    "EstimatorCheck",
    "Grid",
    "Mixture",
    "Results",
    "Run",
    "Setup",
    "Training",
    "bhattacharyya",
    "claims_markdown",
    "evaluate_claims",
    "fit_drift_slope",
    "old_mass",
    "replay_estimator_check",
    "run_grid",
    "run_theory",
    "simulate",
]
