"""The one pairing of base x variant items: (task, task_version, doc_hash, occurrence, filter, metric, replicate).

Compare, the leaderboard's drill-down and the distribution diagnostics all take their paired items
from :func:`pair_runs`, so they agree on which filter is analysed (the taxonomy's, else the first
logged) and on what is left out (items only one side has, NaN values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pandas as pd

from captrack.errors import InputError, MismatchError, UnknownNameError
from captrack.results.pairing_facts import JoinedRows, PairingFacts
from captrack.results.store import Store
from captrack.taxonomy import Taxonomy

__all__ = ["PAIRED_COLUMNS", "PairedItems", "Pairing", "base_task_rows", "join_batch", "pair_runs", "select_step"]

PAIRED_COLUMNS = [
    "task", "filter", "metric", "replicate", "doc_hash", "occ", "doc_id", "base", "variant", "n_choices",
    "base_run", "variant_run",
]

_RANKED_ROWS = """
    SELECT run_id, task, task_version, filter, metric, replicate, doc_hash, doc_id, value, n_choices,
           row_number() OVER (PARTITION BY task, filter, metric, replicate, doc_hash ORDER BY doc_id) AS occ
    FROM {rows} WHERE model = ? AND (task, filter, metric) IN (SELECT task, filter, metric FROM {keys})
"""
_RANKED = _RANKED_ROWS.format(rows="_paired_samples", keys="_keys")


@dataclass
class PairedItems:
    """The items of one variant paired with the base.

    ``items`` has one row per paired, scored (task, filter, metric, replicate, doc_hash, occ) with
    columns :data:`PAIRED_COLUMNS`: ``base`` / ``variant`` are the two values, ``doc_id`` the base's
    lm-eval doc index, ``n_choices`` the item's option count (k), ``base_run`` / ``variant_run`` the
    run ids the rows came from. Sorted by task, metric, replicate, doc_hash, occ.
    """

    base: str
    variant: str
    items: pd.DataFrame
    keys: pd.DataFrame  # task, filter, metric, task_version
    replicates: list[int]
    warnings: list[str] = field(default_factory=list)
    nan_excluded: dict[str, int] = field(default_factory=dict)
    seeds: dict[str, int] | None = None  # one run per side made with different seeds: {"base": s, "variant": t}


def pair_runs(store: Store, base: str, variant: str, taxonomy: Taxonomy, allow_partial: bool,
              step: int | None = None) -> PairedItems:
    """Pair `variant`'s items in `store` with `base`'s (with `step`, only the variant's runs at that training step).

    Raises:
        MismatchError: the runs cover different tasks, versions, metrics, replicates or documents
            (all differences listed); with `allow_partial` these become warnings, the intersection paired.
    """
    pairing = Pairing(store, base, variant, taxonomy, allow_partial, step)
    parts = list(pairing.chunks(None))
    found = pairing.finish()
    return dataclasses.replace(found, items=parts[0].items)  # one run of every task: one chunk (finish raised on none)


def base_task_rows(store: Store, base: str) -> dict[str, int]:
    """The base's rows per task (every filter, metric and replicate): what a run of tasks holds (Pairing.chunks)."""
    return {str(t): int(n) for t, n in store.con.execute(
        "SELECT task, count(*) FROM samples WHERE model = ? GROUP BY task", [base]).fetchall()}


class Pairing:
    """One variant's pairing with the base, a few tasks at a time: the checks over all of its tasks first (filters,
    versions, replicates, judges), then the items of each run of whole tasks (`chunks`, each its own join, so what
    DuckDB and pandas hold is set by the run, not by the variant), then what was found over all of them (`finish`).

    `pair_runs` is the one run of every task; a chunk's rows are the rows `pair_runs` gives for its tasks, in order.
    """

    def __init__(self, store: Store, base: str, variant: str, taxonomy: Taxonomy, allow_partial: bool,
                 step: int | None = None, facts: PairingFacts | None = None, joined: JoinedRows | None = None) -> None:
        """`facts`: what the checks read, read already for many variants at once (captrack.results.pairing_batch),
        else read here; `joined`: where this variant's items were joined with the base's, with others' (None: joined
        here, a run of tasks at a time)."""
        self.store, self.base, self.variant, self.step, self.allow_partial = store, base, variant, step, allow_partial
        self.joined = joined
        if facts is None:
            select_step(store.con, variant, step)
            facts = PairingFacts.read(store, [base, variant])
        _check_models(facts.models, (base, variant))
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.keys = _choose_keys(facts.of(base, variant, facts.logged), base, variant, taxonomy, self.problems,
                                 self.warnings)
        self.replicates, self.remap = _replicates(facts.of(base, variant, facts.runs), base, variant, self.problems)
        if self.remap is not None:
            self.warnings.append(
                f"{variant}: one run each, made with different seeds (base {self.remap[1]}, variant {self.remap[0]}): "
                "paired as one replicate; for replicates, evaluate each checkpoint with several --seed values"
            )
        self.problems += _judge_problems(facts.of(base, variant, facts.judges), base, variant)
        self.nan_excluded: dict[str, int] = {}
        self.rows = 0

    def chunks(self, max_rows: int | None, base_rows: dict[str, int] | None = None) -> Iterator[PairedItems]:
        """The paired items of runs of whole tasks (sorted by name) of about `max_rows` base rows (None: all tasks at
        once), those with any item; none once a problem stops the pairing (`finish` raises it). The store may be
        reopened between chunks (Store.release_memory): each chunk sets up what it queries. `base_rows`: the base's
        rows per task (base_task_rows), read here when not given."""
        seeds = {"base": self.remap[1], "variant": self.remap[0]} if self.remap is not None else None
        for keys in self._runs(max_rows, base_rows):
            items = self._pair(keys)
            if items is not None and not items.empty:
                self.rows += len(items)
                yield PairedItems(self.base, self.variant, items, keys, self.replicates, [], {}, seeds)

    def finish(self) -> PairedItems:
        """What the pairing found over every task: its warnings and NaN counts (items empty; `pair_runs` puts them in).

        Raises:
            MismatchError: as `pair_runs`.
        """
        problems, warnings = self.problems, list(self.warnings)
        if problems:
            if not self.allow_partial:
                raise MismatchError(
                    f"{self.variant!r} cannot be paired with base {self.base!r}:\n  - "
                    + "\n  - ".join(problems)
                    + "\nRe-run both with the same tasks, task versions and --limit, or pass "
                    "--allow-partial to analyse only the items both have."
                )
            warnings += [f"{self.variant}: {p} (analysed the intersection only)" for p in problems]
        nan_excluded = dict(sorted(self.nan_excluded.items()))
        if nan_excluded:
            warnings.append(
                f"{self.variant}: unscored (NaN) items excluded from pairing: "
                + ", ".join(f"{k}: {n}" for k, n in nan_excluded.items())
            )
        if not self.rows:
            why = "; ".join(problems) or "every paired value is NaN (unscored)"
            raise MismatchError(f"{self.variant!r} and base {self.base!r} have no scored item in common ({why}); nothing "
                                "to compare: re-run both on the same tasks and --limit, or check the unscored reasons "
                                "with `captrack judge`")
        seeds = {"base": self.remap[1], "variant": self.remap[0]} if self.remap is not None else None
        return PairedItems(self.base, self.variant, pd.DataFrame(columns=PAIRED_COLUMNS), self.keys, self.replicates,
                           warnings, nan_excluded, seeds)

    def _runs(self, max_rows: int | None, base_rows: dict[str, int] | None) -> list[pd.DataFrame]:
        """The chosen keys cut into runs of whole tasks, each of about `max_rows` of the base's rows."""
        if max_rows is None or self.keys.empty:
            return [self.keys]
        sizes = base_rows if base_rows is not None else base_task_rows(self.store, self.base)
        runs: list[list[str]] = [[]]
        rows = 0
        for task in sorted(set(self.keys["task"])):
            if runs[-1] and rows + int(sizes.get(task, 0)) > max_rows:
                runs.append([])
                rows = 0
            runs[-1].append(task)
            rows += int(sizes.get(task, 0))
        return [self.keys[self.keys["task"].isin(tasks)].reset_index(drop=True) for tasks in runs]

    def _pair(self, keys: pd.DataFrame) -> pd.DataFrame | None:
        """The paired items of `keys`' tasks (None once a problem stops the pairing); their problems and NaN counts kept."""
        if self.joined is not None:  # joined with other variants' already: its rows, when read with theirs
            found = self.joined.items(self.variant, keys)
            if found is not None:
                return None if self.problems and not self.allow_partial else found
        con = self.store.con
        select_step(con, self.variant, self.step)
        con.register("_keys_df", keys)
        con.execute("CREATE OR REPLACE TEMP TABLE _keys AS SELECT task, filter, metric FROM _keys_df")
        con.unregister("_keys_df")
        try:
            if self.joined is not None:  # its rows of the other variants' join, as a view
                self.joined.select(self.variant)
            else:
                _join(con, self.base, self.variant, self.replicates, self.remap)
            unpaired, unscored = con.execute(  # most pairings have neither: their queries are then skipped
                """SELECT count(*) FILTER (WHERE base_doc IS NULL OR variant_doc IS NULL),
                          count(*) FILTER (WHERE base_doc IS NOT NULL AND variant_doc IS NOT NULL
                                           AND (isnan(base) OR isnan(variant))) FROM _joined""").fetchone() or (0, 0)
            self.problems += _unpaired_items(con, self.base, self.variant) if unpaired else []
            if self.problems and not self.allow_partial:
                return None  # only the problems of the other tasks are still wanted, for the one error
            items = con.execute(
                """SELECT task, filter, metric, replicate, doc_hash, occ, base_doc AS doc_id, base, variant, n_choices,
                          base_run, variant_run FROM _joined
                WHERE base_doc IS NOT NULL AND variant_doc IS NOT NULL AND NOT isnan(base) AND NOT isnan(variant)
                ORDER BY task, metric, replicate, doc_hash, occ"""
            ).df()
            for key, n in con.execute(
                """SELECT task || '/' || metric, count(*) FROM _joined
                WHERE base_doc IS NOT NULL AND variant_doc IS NOT NULL AND (isnan(base) OR isnan(variant))
                GROUP BY 1 ORDER BY 1"""
            ).fetchall() if unscored else []:
                self.nan_excluded[str(key)] = self.nan_excluded.get(str(key), 0) + int(n)
            return items[PAIRED_COLUMNS]
        finally:
            con.execute(f"DROP {'VIEW' if self.joined is not None else 'TABLE'} IF EXISTS _joined; DROP TABLE IF EXISTS _keys; "
                        "DROP VIEW IF EXISTS _paired_samples")


def select_step(con: duckdb.DuckDBPyConnection, variant: str, step: int | None) -> None:
    """Temp view ``_paired_samples``: the samples pairing reads (with `step`, less the variant's runs at other steps)."""
    if step is None:
        con.execute("CREATE OR REPLACE TEMP VIEW _paired_samples AS SELECT * FROM samples")
        return
    con.execute("CREATE OR REPLACE TEMP TABLE _other_steps AS SELECT run_id FROM runs WHERE model = ? AND step IS DISTINCT FROM ?",
                [variant, step])
    con.execute("CREATE OR REPLACE TEMP VIEW _paired_samples AS SELECT * FROM samples "
                "WHERE run_id NOT IN (SELECT run_id FROM _other_steps)")


_JOINED = """SELECT {vname}coalesce(b.task, v.task) AS task, coalesce(b.filter, v.filter) AS filter,
               coalesce(b.metric, v.metric) AS metric, coalesce(b.replicate, v.replicate) AS replicate,
               coalesce(b.doc_hash, v.doc_hash) AS doc_hash, coalesce(b.occ, v.occ) AS occ,
               b.doc_id AS base_doc, v.doc_id AS variant_doc, b.value AS base, v.value AS variant,
               b.n_choices AS n_choices, b.run_id AS base_run, v.run_id AS variant_run, b.task_version AS base_version, v.task_version AS variant_version
        FROM ({base_rows}) b FULL OUTER JOIN ({variant_rows}) v
          ON {same}b.task = v.task AND b.task_version = v.task_version AND b.doc_hash = v.doc_hash
         AND b.occ = v.occ AND b.filter = v.filter AND b.metric = v.metric AND b.replicate = v.replicate"""


def _join(
    con: duckdb.DuckDBPyConnection, base: str, variant: str, replicates: list[int], remap: tuple[int, int] | None
) -> None:
    """Full outer join of both sides' ranked rows into temp table ``_joined`` (the common replicates only).

    ``remap`` (variant replicate, base replicate) relabels a single variant run as the base's replicate.
    """
    variant_rows = f"SELECT * REPLACE ({int(remap[1])} AS replicate) FROM ({_RANKED})" if remap else _RANKED
    joined = _JOINED.format(vname="", base_rows=_RANKED, variant_rows=variant_rows, same="")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _joined AS {joined}
        WHERE coalesce(b.replicate, v.replicate) IN (SELECT unnest(?::INTEGER[]))""", [base, variant, replicates])


def join_batch(con: duckdb.DuckDBPyConnection, base: str) -> None:
    """`_join` of many variants at once into temp table ``_bjoined`` (a column ``vname`` names each row's variant),
    from temp tables ``_bkeys`` (vname, task, filter, metric: each variant's keys), ``_breps`` (vname, replicate:
    its common replicates) and ``_bremap`` (vname, replicate: the base replicate a single run is relabelled as)."""
    ranked = _RANKED_ROWS.format(rows="samples", keys="_bkeys")
    base_rows = f"SELECT k.vname, b.* FROM ({ranked}) b JOIN _bkeys k USING (task, filter, metric)"
    variant_rows = """SELECT v.vname, v.run_id, v.task, v.task_version, v.filter, v.metric,
               CAST(coalesce(r.replicate, v.replicate) AS INTEGER) AS replicate, v.doc_hash, v.doc_id, v.value,
               v.n_choices, v.occ
        FROM (SELECT s.model AS vname, s.run_id, s.task, s.task_version, s.filter, s.metric, s.replicate, s.doc_hash,
                     s.doc_id, s.value, s.n_choices, row_number() OVER (
                         PARTITION BY s.model, s.task, s.filter, s.metric, s.replicate, s.doc_hash ORDER BY s.doc_id) AS occ
              FROM samples s JOIN _bkeys k
                ON k.vname = s.model AND k.task = s.task AND k.filter = s.filter AND k.metric = s.metric) v
        LEFT JOIN _bremap r ON r.vname = v.vname"""
    joined = _JOINED.format(vname="coalesce(b.vname, v.vname) AS vname, ", base_rows=base_rows,
                            variant_rows=variant_rows, same="b.vname = v.vname AND ")
    con.execute(f"""CREATE OR REPLACE TEMP TABLE _bjoined AS {joined}
        WHERE (coalesce(b.vname, v.vname), coalesce(b.replicate, v.replicate)) IN (SELECT vname, replicate FROM _breps)""",
                [base])


def _check_models(known: list[str], models: tuple[str, ...]) -> None:
    for model in models:
        if model not in known:
            raise UnknownNameError("model in the store", model, known)


def _choose_keys(logged: list[tuple[Any, ...]], base: str, variant: str, taxonomy: Taxonomy, problems: list[str],
                 warnings: list[str]) -> pd.DataFrame:
    """Pick one filter per (task, metric) and list what only one side logged (`logged`: PairingFacts.logged's rows
    of the two, sorted).

    The few rows logged per (model, task, filter, metric) are worked through as tuples: pandas' per-call cost was most
    of a small variant's pairing (a leaderboard pairs hundreds)."""
    for model in sorted({row[0] for row in logged}):
        mixed = sorted({task for m, task, *_, n_versions in logged if m == model and n_versions > 1})
        if mixed:
            raise InputError(
                f"model {model!r} has runs of different versions of {', '.join(mixed)}; "
                "ingest one version per model (or give the runs different --name)"
            )
    sides: dict[str, set[tuple[str, str, str]]] = {base: set(), variant: set()}
    for model, task, filter_name, metric, *_ in logged:
        sides[model].add((task, filter_name, metric))
    b, v = sides[base], sides[variant]
    for side, only in ((base, b - v), (variant, v - b)):
        if only:
            shown = ", ".join(f"{t}/{m} (filter {f})" for t, f, m in sorted(only)[:8])
            problems.append(f"metrics logged only by {side!r}: {shown}")
    tracked = {(m.task, m.metric): m.filter for m in taxonomy.members}
    chosen = []
    by_metric: dict[tuple[str, str], list[str]] = {}
    for task, filter_name, metric in sorted(b & v):
        by_metric.setdefault((task, metric), []).append(filter_name)
    for (task, metric), filters in sorted(by_metric.items()):
        preferred = tracked.get((task, metric), "none")
        pick = preferred if preferred in filters else sorted(filters)[0]
        if len(filters) > 1:
            warnings.append(
                f"{task}/{metric}: logged under filters {filters}; analysed filter {pick!r} "
                "(name the filter in taxonomy/captrack.yaml to choose another)"
            )
        chosen.append((task, pick, metric))
    versions = {(task, f, metric): version for model, task, f, metric, version, _ in logged if model == base}
    frame = pd.DataFrame(chosen, columns=["task", "filter", "metric"])
    frame["task_version"] = [versions.get(k, "") for k in chosen]
    _version_problems(logged, base, variant, problems)
    return frame


def _version_problems(logged: list[tuple], base: str, variant: str, problems: list[str]) -> None:
    """A task logged at one version by the base and another by the variant (`logged`: _choose_keys' rows, sorted)."""
    per_task: dict[tuple[str, str], str] = {}
    for model, task, _, _, version, _ in logged:
        if version is not None:  # the first version logged per (model, task), as pandas' first() took it
            per_task.setdefault((model, task), version)
    for task in sorted({row[1] for row in logged}):
        vb, vv = per_task.get((base, task)), per_task.get((variant, task))
        if vb is not None and vv is not None and vb != vv:
            problems.append(f"task {task}: version {vb} in the base but {vv} in the variant")


def _replicates(runs: list[tuple[Any, ...]], base: str, variant: str, problems: list[str]
                ) -> tuple[list[int], tuple[int, int] | None]:
    """The replicates both sides have, and (variant, base) replicate to pair when each side is one run (`runs`:
    PairingFacts.runs' rows of the two, sorted)."""
    reps: dict[str, set[int]] = {}
    for model in (base, variant):
        dupes = [row[1:] for row in runs if row[0] == model and row[3] > 1]
        if dupes:
            rep, task, n = dupes[0]
            raise InputError(
                f"model {model!r} has {n} runs of task {task} as replicate {rep}; give replicates "
                "distinct seeds (lm-eval --seed) or ingest them with --replicate N"
            )
        reps[model] = {int(row[1]) for row in runs if row[0] == model}
    if len(reps[base]) == 1 and len(reps[variant]) == 1 and reps[base] != reps[variant]:
        (b,), (v,) = reps[base], reps[variant]
        return [b], (v, b)  # one run per checkpoint pairs whatever its seed
    common = sorted(reps[base] & reps[variant])
    if reps[base] != reps[variant]:
        problems.append(
            f"replicates (seeds) differ: base has {sorted(reps[base])}, variant has {sorted(reps[variant])}; "
            "replicates pair seed by seed, so evaluate both with the same --seed values "
            "(or ingest into a store with `captrack ingest --replicate N` to set them)"
        )
    return common, None


def _judge_problems(judges: list[tuple[Any, ...]], base: str, variant: str) -> list[str]:
    """Judged metrics must be judged on both sides, by the same judge (a judge swap is not drift); `judges`:
    PairingFacts.judges' rows of the two."""
    sides: dict[str, dict[tuple[str, str], str]] = {base: {}, variant: {}}
    for model, task, metric, names in judges:
        sides[model][(task, metric)] = names
    b, v = sides[base], sides[variant]
    return [
        f"{task}/{metric} is judged by {b.get((task, metric)) or 'no judge'} in the base but "
        f"{v.get((task, metric)) or 'no judge'} in the variant; run `captrack judge` on both runs with the same --judge"
        for task, metric in sorted(b.keys() | v.keys()) if b.get((task, metric)) != v.get((task, metric))
    ]


def _unpaired_items(con: duckdb.DuckDBPyConnection, base: str, variant: str) -> list[str]:
    rows = con.execute(
        """SELECT task, count(*) FILTER (WHERE variant_doc IS NULL) AS only_base,
                  count(*) FILTER (WHERE base_doc IS NULL) AS only_variant,
                  list(DISTINCT base_doc ORDER BY base_doc) FILTER (WHERE variant_doc IS NULL)[1:5] AS base_ids,
                  list(DISTINCT variant_doc ORDER BY variant_doc) FILTER (WHERE base_doc IS NULL)[1:5] AS variant_ids
        FROM _joined WHERE (task, filter, metric) IN (SELECT task, filter, metric FROM _keys)
        GROUP BY task HAVING only_base > 0 OR only_variant > 0 ORDER BY task"""
    ).fetchall()
    problems = []
    for task, only_base, only_variant, base_ids, variant_ids in rows:
        parts = []
        if only_base:
            parts.append(f"{only_base} (doc, metric) rows only in the base (doc ids {base_ids} ...)")
        if only_variant:
            parts.append(f"{only_variant} only in the variant (doc ids {variant_ids} ...)")
        problems.append(f"task {task}: " + "; ".join(parts) + " — different --limit, documents or task version?")
    return problems
