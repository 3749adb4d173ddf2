"""CapTrackCallback's anytime-valid flags (issue 53, item 1): at the k-th look a capability is flagged only where
its verdict is significant with p ≤ α·6/(π²k²), so an unchanged capability is ever flagged in at most α of runs
however many steps are evaluated and whenever training stops; the flag goes to the trainer's loggers beside the
drift numbers. The evaluation itself is replaced by run folders written beforehand (the weights play no part)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fakeruns import FakeTask, write_run

from captrack.analysis.curve_stats import spent_alpha
from captrack.analysis.intervals import score_pvalue

FACTS = "captrack_probe_c1_facts"


def _acc(gains: int, losses: int) -> list[float]:
    """100 items, 60 right in the base: the first `losses` of those wrong, the first `gains` of the rest right."""
    return [0.0 if i < losses else 1.0 for i in range(60)] + [1.0 if i < gains else 0.0 for i in range(40)]


class _Handler:
    def __init__(self) -> None:
        self.logs: list[dict[str, float]] = []

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, float]) -> None:
        self.logs.append(dict(logs))


class _Trainer:
    def __init__(self, output_dir: Path) -> None:
        self.args = SimpleNamespace(output_dir=str(output_dir))
        self.callback_handler = _Handler()


def test_a_flag_needs_the_p_value_its_look_may_spend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from captrack.training.callback import CapTrackCallback

    write_run(tmp_path / "base", "base", [FakeTask(FACTS, {"acc": _acc(0, 0)})])
    # look 1: p = 5e-8 (flagged); look 2: nothing moved; look 3: p = 0.023 < 5% (regressed) but > α_3 = 0.0034
    steps = {10: (0, 30), 20: (1, 1), 30: (2, 10)}
    for step, (gains, losses) in steps.items():
        write_run(tmp_path / f"step-{step}", f"step-{step}", [FakeTask(FACTS, {"acc": _acc(gains, losses)})])
    trainer = _Trainer(tmp_path / "train")
    callback = CapTrackCallback(trainer, tasks=[FACTS], every=10, base_run=str(tmp_path / "base"))
    monkeypatch.setattr(callback, "_evaluate", lambda model, tok, name, step, epoch: tmp_path / name)
    state = SimpleNamespace(global_step=0, is_world_process_zero=True, epoch=0.0, log_history=[])
    control = SimpleNamespace(should_log=False)
    for step in steps:
        state.global_step = step
        callback.on_step_end(None, state, control, model=None)
    assert callback.flags == {10: {"captrack/C1/flag": -1.0}, 20: {"captrack/C1/flag": 0.0},
                              30: {"captrack/C1/flag": 0.0}}
    assert float(score_pvalue(2, 10)) < 0.05 and float(score_pvalue(2, 10)) > spent_alpha(3)
    assert callback.first_flagged == {"C1": 10}
    assert all(logs["captrack/C1/flag"] == callback.flags[s]["captrack/C1/flag"] and "captrack/C1/drift" in logs
               for s, logs in zip(steps, trainer.callback_handler.logs, strict=True))
    assert [entry["step"] for entry in state.log_history] == list(steps)
    assert set(callback.logged[10]) == {"captrack/C1/drift", "captrack/C1/forgetting_adj",
                                        "captrack/C1/backward_transfer_adj"}  # the drift numbers, as before


def test_the_error_spent_over_all_looks_is_alpha() -> None:
    assert math.isclose(sum(spent_alpha(k) for k in range(1, 200_000)), 0.05, rel_tol=1e-4)
    assert spent_alpha(1) == pytest.approx(0.05 * 6 / math.pi**2)
    with pytest.raises(ValueError, match="from 1"):
        spent_alpha(0)
