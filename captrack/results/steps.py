"""The step dimension of the store: which training steps a model's runs carry, and the rules they obey.

A model whose runs carry training steps is a *trajectory*; each step pairs with the base like an end
point. The rules, checked where the runs enter (ingest) and where they are paired (compare):
one run per (model, step, replicate, task); a model's runs either all carry a step or none does;
the base carries none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import duckdb

from captrack.errors import InputError


class _Connected(Protocol):
    """What step_runs needs of a Store (an open connection): no import of the store module, which imports this one."""

    con: duckdb.DuckDBPyConnection

__all__ = ["check_base_has_no_steps", "check_one_run_per_step", "has_steps", "model_steps", "step_runs", "stepped_models"]


def has_steps(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether the store's runs table has the step column (stores written before it have none)."""
    found = con.execute(
        "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'runs' AND column_name = 'step'"
    ).fetchone()
    return bool(found and found[0])


def stepped_models(con: duckdb.DuckDBPyConnection, models: list[str]) -> set[str]:
    """Which of `models` have runs with a training step (whose model_steps are not []), in one query."""
    if not models or not has_steps(con):
        return set()
    marks = ", ".join("?" * len(models))
    rows = con.execute(f"SELECT DISTINCT model FROM runs WHERE step IS NOT NULL AND model IN ({marks})", models)
    return {str(r[0]) for r in rows.fetchall()}


def model_steps(con: duckdb.DuckDBPyConnection, model: str) -> list[int]:
    """The training steps `model`'s runs carry, ascending ([] for an end point: runs without a step)."""
    if not has_steps(con):
        return []
    rows = con.execute("SELECT DISTINCT step FROM runs WHERE model = ? AND step IS NOT NULL ORDER BY 1", [model])
    return [int(r[0]) for r in rows.fetchall()]


def check_one_run_per_step(con: duckdb.DuckDBPyConnection, run_id: str, results_path: Path) -> None:
    """Refuse the run just added when its model already has a run of one of its tasks at its step and replicate,
    or when the model would hold runs with and without a step.

    Raises:
        InputError: naming the run, the model, the step and the run already there (the caller rolls back).
    """
    row = con.execute("SELECT model, step, replicate FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        return
    model, step, replicate = row
    mixed = con.execute(
        "SELECT results_path, step FROM runs WHERE model = ? AND run_id <> ? AND (step IS NULL) <> (? IS NULL) LIMIT 1",
        [model, run_id, step],
    ).fetchone()
    if mixed is not None:
        here, there = (f"at step {step}", "without a step") if step is not None else ("without a step", f"at step {mixed[1]}")
        raise InputError(
            f"{results_path}: model {model!r} would hold runs {here} and {there} ({mixed[0]}); a trajectory's runs "
            "all carry a step (--step N, or the checkpoint's trainer_state.json): ingest it under another --name "
            "or give every run its step (nothing was ingested)"
        )
    if step is None:
        return
    clash = con.execute(
        """SELECT r.results_path, t.task FROM runs r JOIN run_tasks t USING (run_id)
        WHERE r.model = ? AND r.step = ? AND r.replicate = ? AND r.run_id <> ?
          AND t.task IN (SELECT task FROM run_tasks WHERE run_id = ?) ORDER BY t.task LIMIT 1""",
        [model, step, replicate, run_id, run_id],
    ).fetchone()
    if clash is not None:
        raise InputError(
            f"{results_path}: step {step} is given twice for model {model!r} (replicate {replicate}, task {clash[1]}): "
            f"{clash[0]} is already stored at that step. Give this run its own --step, or another --replicate if it "
            "is a second seed (nothing was ingested)"
        )


def check_base_has_no_steps(con: duckdb.DuckDBPyConnection, base: str) -> None:
    """Refuse a base whose runs carry training steps: drift is measured from one fixed base.

    Raises:
        InputError: naming the base and its steps.
    """
    steps = model_steps(con, base)
    if steps:
        shown = ", ".join(map(str, steps[:8])) + (" ..." if len(steps) > 8 else "")
        raise InputError(
            f"base {base!r} carries training steps ({shown}); the base is one fixed checkpoint that every step of "
            "a trajectory is compared with. Re-ingest the base without --step (or from a folder without "
            "trainer_state.json), or pick another --base (nothing was written)"
        )


def step_runs(store: _Connected, models: list[str]) -> dict[tuple[str, int | None, str], str]:
    """(model, step or None, task) -> the first run id (sorted) of `models` evaluating it (the steps page's texts)."""
    if not models:
        return {}
    con = store.con
    step = "r.step" if has_steps(con) else "NULL"
    marks = ", ".join("?" for _ in models)
    rows = con.execute(f"""SELECT r.model, {step}, t.task, min(r.run_id) FROM runs r JOIN run_tasks t USING (run_id)
        WHERE r.model IN ({marks}) GROUP BY 1, 2, 3""", models).fetchall()
    return {(str(m), None if s is None else int(s), str(t)): str(run) for m, s, t, run in rows}
