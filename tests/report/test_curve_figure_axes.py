"""The drift-over-training figures keep the step tick labels on every panel and say the x axis is the training step
(issue 51: with sharex the panels above another row lost their tick labels, and no axis said what x is)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from captrack.report import over_training
from captrack.report.over_training import curve_figures

CAPABILITIES = ("C1", "C2", "C3", "W1", "W2", "H1")  # two rows of four panels, the second with two


def _curves() -> pd.DataFrame:
    rows = []
    for key in CAPABILITIES:
        for step in (100, 200, 300):
            rows.append({"level": "capability", "key": key, "variant": "sft", "algorithm": "SFT", "step": step,
                         "drift_pct": -step / 100, "ci_low": -step / 100 - 2, "ci_high": -step / 100 + 2, "mde_pct": 5.0,
                         "forgetting_adj": step / 10_000, "backward_transfer_adj": step / 20_000})
    return pd.DataFrame(rows)


def test_every_panel_shows_its_step_ticks_and_the_axis_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    drawn: list[Any] = []
    save = over_training._save

    def keep(fig: Any, out: Path, stem: str) -> list[Path]:
        fig.canvas.draw()
        drawn.append((stem, [ax for ax in fig.axes if ax.axison]))
        return save(fig, out, stem)

    monkeypatch.setattr(over_training, "_save", keep)
    assert len(curve_figures(_curves(), tmp_path)) == 4
    assert [stem for stem, _ in drawn] == ["drift_over_training", "rates_over_training"]
    for stem, axes in drawn:
        assert len(axes) == len(CAPABILITIES), stem
        for ax in axes:
            shown = [t.get_text() for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
            assert {"100", "200", "300"} <= set(shown), (stem, ax.get_title(loc="left"), shown)
            assert ax.get_xlabel() == "training step", (stem, ax.get_title(loc="left"))
