"""The drift-over-training figure starts every line at step 0, the base compared with itself (Δ = 0), and draws the
change in points, the verdicts' unit, not relative drift (issue 56)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from captrack.report import over_training
from captrack.report.over_training import curve_figures


def _curves(first: int) -> pd.DataFrame:
    rows = []
    for key in ("C1", "W1"):
        for step in (first, 200, 300):
            rows.append({"level": "capability", "key": key, "variant": "sft", "algorithm": "SFT", "step": step,
                         "base_value": 0.5, "drift_pct": 40.0, "ci_low": 30.0, "ci_high": 50.0, "mde_pct": 10.0,
                         "oriented_change": 20.0 + step / 100, "change_ci_low": 15.0, "change_ci_high": 25.0 + step / 100,
                         "forgetting_adj": step / 10_000, "backward_transfer_adj": step / 20_000})
    return pd.DataFrame(rows)


def _drawn(curves: pd.DataFrame, out: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    drawn: dict[str, list[Any]] = {}
    save = over_training._save

    def keep(fig: Any, folder: Path, stem: str) -> list[Path]:
        drawn[stem] = [ax for ax in fig.axes if ax.axison]
        return save(fig, folder, stem)

    monkeypatch.setattr(over_training, "_save", keep)
    curve_figures(curves, out)
    return drawn


def test_every_line_starts_at_the_base_and_is_drawn_in_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = _drawn(_curves(100), tmp_path, monkeypatch)
    drift, rates = drawn["drift_over_training"], drawn["rates_over_training"]
    assert drift[0].get_ylabel() == "Δ vs base, + better (points)"
    for ax in drift:
        (line,) = ax.get_lines()[1:]  # the first line is the zero rule
        assert list(line.get_xdata()) == [0.0, 100.0, 200.0, 300.0]
        assert list(line.get_ydata()) == [0.0, 21.0, 22.0, 23.0]  # Δ in points, not the 40% relative drift
        band = ax.patches[0]  # the MDE band: 10% of a base of 0.5 = 5 points
        assert band.get_y() == pytest.approx(-5.0) and band.get_height() == pytest.approx(10.0)
    for ax in rates:
        assert all(list(line.get_xdata())[:2] == [0.0, 100.0] and line.get_ydata()[0] == 0.0 for line in ax.get_lines())


def test_a_trajectory_that_has_a_step_0_is_not_given_another(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn = _drawn(_curves(0), tmp_path, monkeypatch)
    (line,) = drawn["drift_over_training"][0].get_lines()[1:]
    assert list(line.get_xdata()) == [0.0, 200.0, 300.0] and line.get_ydata()[0] == 20.0
