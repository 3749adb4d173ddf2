"""A simulation lab for mass forgetting vs old-component drift (Balasubramanian & Kasiviswanathan, 2026).

The learner is a two-component Gaussian mixture (old task, new task) with a shared covariance,
started old-task-correct and trained under forward KL (maximum likelihood on new-task data, optionally
with replay) or reverse KL (on its own samples, towards a target that keeps the old mode). The lab
records the old weight, the old mean's drift and the Bhattacharyya coefficient over training, and
checks the paper's claims numerically; `run_theory` writes the tables, figures and verdicts.
"""

from captrack.theory.claims import BC_SLOPE, Claim, DriftFit, evaluate_claims, fit_drift_slope
from captrack.theory.experiments import Grid, Results, run_grid
from captrack.theory.lab import claims_markdown, run_theory
from captrack.theory.mixture import Mixture, bhattacharyya
from captrack.theory.replay import EstimatorCheck, replay_estimator_check
from captrack.theory.simulate import Run, Setup, Training, old_mass, simulate

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
