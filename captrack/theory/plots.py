"""Figures of the theory lab (seaborn on matplotlib's Agg backend), each saved as PNG and SVG."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from captrack.theory.claims import BC_SLOPE, DriftFit

__all__ = ["plot_all"]


def _save(fig: Any, out: Path, name: str) -> list[Path]:
    """Save `fig` as out/name.png and out/name.svg, close it, and return both paths."""
    import matplotlib.pyplot as plt

    paths = [out / f"{name}.png", out / f"{name}.svg"]
    for path in paths:
        fig.savefig(path, dpi=150, bbox_inches="tight")
    plt.close(fig)
    return paths


def _label(row: pd.Series) -> str:
    """Display label of a run family: objective, estimator and replay."""
    if row.objective == "forward":
        return f"forward KL, replay {row.replay:g}"
    return f"reverse KL ({row.estimator})" + (f", replay {row.replay:g}" if row.replay else "")


def _trajectories(trajectories: pd.DataFrame, out: Path) -> list[Path]:
    """Old weight, old mass, old drift and BC over training at one separation and dimension."""
    import seaborn as sns

    seps = sorted(trajectories.separation.unique())
    sep = min(seps, key=lambda s: abs(s - 4.0))
    dim = max(trajectories.dim.unique())
    rows = trajectories[(trajectories.separation == sep) & (trajectories.dim == dim)
                        & (trajectories.estimator != "score") & (trajectories.step > 0)].copy()
    rows["run"] = rows.apply(_label, axis=1)
    long = rows.melt(id_vars=["run", "step", "seed"], value_vars=["old_weight", "old_mass", "old_drift", "bc"],
                     var_name="quantity", value_name="value")
    grid = sns.relplot(data=long, x="step", y="value", hue="run", col="quantity", col_wrap=2, kind="line",
                       facet_kws={"sharey": False}, height=2.8, aspect=1.4, errorbar=None)
    grid.set(xscale="log")
    grid.axes_dict["old_drift"].set(yscale="log", ylim=(1e-4, None))
    grid.figure.suptitle(f"Training trajectories (Δ = {sep:g}, d = {dim})", y=1.02)
    return _save(grid.figure, out, "trajectories")


def _drift(runs: pd.DataFrame, fit: DriftFit, out: Path) -> list[Path]:
    """log peak old drift against Δᵀ Σ⁻¹ Δ under reverse KL, with the fit and the −1/8 reference."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    rows = runs[(runs.objective == "reverse") & (runs.estimator == "reparam")]
    fig, ax = plt.subplots(figsize=(5.5, 4))
    sns.scatterplot(data=rows, x="delta_sq", y=np.log(rows.peak_old_drift), hue="dim", palette="viridis", ax=ax)
    x = np.linspace(rows.delta_sq.min(), rows.delta_sq.max(), 50)
    ax.plot(x, fit.intercept + fit.slope * x, color="black", label=f"fit: slope {fit.slope:.3f}")
    anchor = fit.intercept + fit.slope * x.mean()
    ax.plot(x, anchor + BC_SLOPE * (x - x.mean()), "--", color="grey", label="slope −1/8 (BC)")
    ax.set(xlabel="Δᵀ Σ⁻¹ Δ", ylabel="log peak old-mean drift", title="Reverse KL: overlap-gated drift")
    ax.legend(title="dimension / line", fontsize=8)
    return _save(fig, out, "drift_vs_separation")


def _final_weights(runs: pd.DataFrame, out: Path) -> list[Path]:
    """Final old weight and old mass against separation for every run family."""
    import seaborn as sns

    rows = runs[runs.estimator != "score"].copy()
    rows["run"] = rows.apply(_label, axis=1)
    long = rows.melt(id_vars=["run", "separation"], value_vars=["final_old_weight", "final_old_mass"],
                     var_name="quantity", value_name="value")
    grid = sns.catplot(data=long, x="separation", y="value", hue="run", col="quantity", kind="point",
                       height=3.2, aspect=1.2, errorbar=None)
    grid.figure.suptitle("Where the old weight ends up", y=1.03)
    return _save(grid.figure, out, "final_old_weight")


def plot_all(runs: pd.DataFrame, trajectories: pd.DataFrame, fit: DriftFit, out: Path) -> list[Path]:
    """Write every figure into `out`; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import seaborn as sns

    with matplotlib.rc_context():  # the theme is these figures' own: the caller's rcParams are restored after
        sns.set_theme(style="whitegrid", context="paper")
        return [*_trajectories(trajectories, out), *_drift(runs, fit, out), *_final_weights(runs, out)]
