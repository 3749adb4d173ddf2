"""Many small variants of one base paired at once: their checks read in one query each, their items joined with the
base's in one join.

Pairing one variant with its base is about ten DuckDB queries, each costing a few milliseconds however few rows it
touches; a leaderboard of 200 variants of 1,200 items spent more time in those queries than in its rows. A
`PairingBatch` reads the checks' rows of every variant at once (captrack.results.pairing_facts), decides each
variant's pairing as captrack.results.pairing does (its keys, replicates and problems, or the error it raises,
raised when that variant is reached), then joins every variant's items with the base's in one query; each
variant's `Pairing` then reads its own rows of that join through the same queries as its own join.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pandas as pd

from captrack.errors import CaptrackError
from captrack.results.pairing import PAIRED_COLUMNS, Pairing, join_batch, select_step
from captrack.results.pairing_facts import PairingFacts
from captrack.results.store import Store
from captrack.taxonomy import Taxonomy

__all__ = ["BATCH_ROWS", "PairingBatch", "batch_sizes"]

BATCH_ROWS = 1 << 17
"""The most base rows a batch joins (the base's rows times its variants): what one chunk of a large variant holds
(captrack.compare.pair_reads.CHUNK_ROWS), so a batch holds no more than a chunk does."""


def batch_sizes(base_rows: int, n_variants: int) -> int:
    """How many variants of a base of `base_rows` rows a batch pairs (1: each alone, as large variants are)."""
    return max(1, min(n_variants, BATCH_ROWS // max(1, base_rows)))


class PairingBatch:
    """The pairings of `variants` (none with training steps) with `base`, decided and joined at once; `pairing(v)`
    gives each (or raises the error pairing it alone raises), `close()` drops the join."""

    def __init__(self, store: Store, base: str, variants: list[str], taxonomy: Taxonomy, allow_partial: bool) -> None:
        self.store = store
        select_step(store.con, "", None)  # the samples as they are: no variant of a batch has steps
        facts = PairingFacts.read(store, [base, *variants])
        self.pairings: dict[str, Pairing | CaptrackError] = {}
        for variant in variants:
            try:
                self.pairings[variant] = Pairing(store, base, variant, taxonomy, allow_partial, facts=facts, joined=self)
            except CaptrackError as exc:  # raised when this variant is reached, as it would be paired alone
                self.pairings[variant] = exc
        self._join(base, [p for p in self.pairings.values() if isinstance(p, Pairing)])
        self.clean = self._clean_items()

    def pairing(self, variant: str) -> Pairing:
        """`variant`'s pairing (the error deciding it raised, raised now)."""
        found = self.pairings[variant]
        if isinstance(found, CaptrackError):
            raise found
        return found

    def items(self, variant: str, keys: pd.DataFrame) -> pd.DataFrame | None:
        """`variant`'s paired items, as its own join gives them, when `keys` are all of its keys and its join has no
        unpaired or unscored row (else None: Pairing reads them through `select`, with their problems)."""
        if self.clean.get(variant) is None or len(keys) != len(self.pairings[variant].keys):  # type: ignore[union-attr]
            return None
        return self.clean.pop(variant)

    def select(self, variant: str) -> None:
        """``_joined``: `variant`'s rows of the batch's join of the keys in ``_keys`` (a run of its tasks), which
        Pairing reads as it reads its own join."""
        name = variant.replace("'", "''")
        self.store.con.execute(f"CREATE OR REPLACE TEMP VIEW _joined AS SELECT * EXCLUDE (vname) FROM _bjoined WHERE "
                               f"vname = '{name}' AND (task, filter, metric) IN (SELECT task, filter, metric FROM _keys)")

    def close(self) -> None:
        """Drop the batch's join and tables."""
        self.store.con.execute("DROP VIEW IF EXISTS _joined; DROP TABLE IF EXISTS _bjoined; DROP TABLE IF EXISTS _bkeys; "
                               "DROP TABLE IF EXISTS _breps; DROP TABLE IF EXISTS _bremap")

    def _clean_items(self) -> dict[str, pd.DataFrame]:
        """Per variant whose join has neither unpaired nor unscored rows, its paired items (Pairing's query, one for
        all of them, the rows split by variant)."""
        con = self.store.con
        clean = [str(r[0]) for r in con.execute(
            """SELECT vname FROM _bjoined GROUP BY vname
            HAVING count(*) FILTER (WHERE base_doc IS NULL OR variant_doc IS NULL OR isnan(base) OR isnan(variant)) = 0"""
        ).fetchall()]
        if not clean:
            return {}
        con.register("_bclean_df", pd.DataFrame({"vname": pd.Series(clean, dtype=object)}))
        frame = con.execute(
            f"""SELECT vname, {", ".join(PAIRED_COLUMNS[:6])}, base_doc AS doc_id, base, variant, n_choices, base_run,
                      variant_run FROM _bjoined WHERE vname IN (SELECT vname FROM _bclean_df)
            ORDER BY vname, task, metric, replicate, doc_hash, occ""").df()
        con.unregister("_bclean_df")
        names = frame["vname"].to_numpy(dtype=object)
        starts = [0, *(np.flatnonzero(names[1:] != names[:-1]) + 1).tolist(), len(frame)]
        frame = frame[PAIRED_COLUMNS]
        missing_k = frame["n_choices"].isna().to_numpy() if isinstance(frame["n_choices"].dtype, pd.Int32Dtype) else None
        return {str(names[a]): _as_alone(frame.iloc[a:b], missing_k is not None and not missing_k[a:b].any())
                for a, b in pairwise(starts)}

    def _join(self, base: str, pairings: list[Pairing]) -> None:
        """Temp table ``_bjoined``: pairing.py's ``_joined`` of every pairing, a column ``vname`` naming its variant
        (each variant's keys, its replicates, a single run relabelled as the base's replicate)."""
        con = self.store.con
        keys = pd.DataFrame({name: pd.Series([value for p in pairings for value in (
            p.keys[name].astype(str).tolist() if name != "vname" else [p.variant] * len(p.keys))], dtype=object)
            for name in ("vname", "task", "filter", "metric")})
        replicates = _named_ints([(p.variant, r) for p in pairings for r in p.replicates])
        remap = _named_ints([(p.variant, p.remap[1]) for p in pairings if p.remap is not None])
        for name, frame, columns in (("_bkeys", keys, "vname VARCHAR, task VARCHAR, filter VARCHAR, metric VARCHAR"),
                                     ("_breps", replicates, "vname VARCHAR, replicate INTEGER"),
                                     ("_bremap", remap, "vname VARCHAR, replicate INTEGER")):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {name} ({columns})")  # typed, empty or not
            if len(frame):
                con.register(f"{name}_df", frame)
                con.execute(f"INSERT INTO {name} SELECT * FROM {name}_df")
                con.unregister(f"{name}_df")
        join_batch(con, base)


def _named_ints(rows: list[tuple[str, int]]) -> pd.DataFrame:
    """(vname, replicate) rows typed as DuckDB should read them (VARCHAR, INTEGER), empty ones included."""
    return pd.DataFrame({"vname": pd.Series([r[0] for r in rows], dtype=object),
                         "replicate": pd.Series([int(r[1]) for r in rows], dtype="int32")})


def _as_alone(items: pd.DataFrame, complete_k: bool) -> pd.DataFrame:
    """One variant's rows (a slice of the batch's) indexed and typed as its own query gives them: DuckDB types an
    INTEGER column nullable only when a NULL is among the rows fetched, so where this variant misses no option count
    (`complete_k`) its own query gives plain int32."""
    items.index = pd.RangeIndex(len(items))
    if complete_k:
        items["n_choices"] = items["n_choices"].astype("int32")
    return items
