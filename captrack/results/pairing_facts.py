"""What pairing a variant with its base checks first, read for one variant or for many at once.

captrack.results.pairing decides, per variant, which filter of each (task, metric) is analysed and which
replicates pair, from a few grouped rows of the store; for a leaderboard of hundreds of small variants, reading
them per variant was most of the pairing (about ten DuckDB queries each). `PairingFacts` holds those rows for any
number of models (a query each); captrack.results.pairing_batch reads them once for many variants.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import pandas as pd

from captrack.results.store import Store

__all__ = ["JoinedRows", "PairingFacts"]


@dataclass(frozen=True)
class PairingFacts:
    """What a pairing's checks read of the store, for one or many models at once (sorted rows): every model's name;
    per (model, task, filter, metric) its least task version and number of versions; per (model, replicate, task)
    its runs; per judged (model, task, metric) its judges."""

    models: list[str]
    logged: list[tuple[Any, ...]]
    runs: list[tuple[Any, ...]]
    judges: list[tuple[Any, ...]]

    @classmethod
    def read(cls, store: Store, models: list[str]) -> PairingFacts:
        """The facts of `models` (from ``_paired_samples``: a trajectory's step selected), a query each."""
        con, wanted = store.con, list(dict.fromkeys(models))
        marks = ", ".join("?" * len(wanted))
        logged = con.execute(
            f"""SELECT model, task, filter, metric, min(task_version) AS task_version, count(DISTINCT task_version)
            FROM _paired_samples WHERE model IN ({marks}) GROUP BY ALL ORDER BY ALL""", wanted).fetchall()
        runs = con.execute(
            f"""SELECT model, replicate, task, count(DISTINCT run_id) FROM _paired_samples WHERE model IN ({marks})
            GROUP BY ALL ORDER BY ALL""", wanted).fetchall()
        judges = con.execute(  # a store written before judged metrics existed has no judge column
            f"""SELECT model, task, metric, string_agg(DISTINCT judge, ', ' ORDER BY judge) FROM _paired_samples
            WHERE model IN ({marks}) AND judge IS NOT NULL GROUP BY ALL ORDER BY ALL""", wanted
        ).fetchall() if store.has_column("samples", "judge") else []
        return cls([r[0] for r in con.execute("SELECT DISTINCT model FROM runs").fetchall()], logged, runs, judges)

    def of(self, base: str, variant: str, rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        """The rows of `rows` (one of this object's lists) about the base or the variant, in their order."""
        by_model = self._by_model.get(id(rows))
        if by_model is None:  # each list's row positions per model, once: a batch asks for hundreds of variants' rows
            by_model = self._by_model[id(rows)] = {}
            for position, row in enumerate(rows):
                by_model.setdefault(row[0], []).append(position)
        positions = sorted({*by_model.get(base, []), *by_model.get(variant, [])})
        return [rows[i] for i in positions]

    @cached_property
    def _by_model(self) -> dict[int, dict[str, list[int]]]:
        return {}


class JoinedRows(Protocol):
    """Variants' items joined with the base's already, all at once (captrack.results.pairing_batch)."""

    def items(self, variant: str, keys: pd.DataFrame) -> pd.DataFrame | None:
        """`variant`'s paired items of `keys`, read with the others' (None: read them through `select`)."""

    def select(self, variant: str) -> None:
        """Make ``_joined`` (a view) hold `variant`'s rows of the keys in ``_keys``, as Pairing's own join would."""
