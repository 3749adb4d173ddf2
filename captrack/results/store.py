"""The results store: a DuckDB file holding the tidy per-sample table and the runs behind it."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from captrack.errors import FILE_NOTE, InputError
from captrack.labels import VariantLabels
from captrack.results.checkpoints import run_position
from captrack.results.connect import connect
from captrack.results.ingest_sql import ReadAgain, SamplesRead, read_windows, samples_insert_sql
from captrack.results.runfiles import (
    Run,
    TaskInfo,
    file_digest,
    file_state,
    samples_error,
    samples_path,
    stored_path,
)
from captrack.results.sqlvalues import quote_literal
from captrack.results.steps import check_one_run_per_step

__all__ = ["SAMPLE_COLUMNS", "IngestResult", "SamplesFile", "Store", "StoreError"]

StoreError = duckdb.Error
"""What the database raises (a full disk included), for callers that must not name duckdb."""

SAMPLE_COLUMNS = (
    "run_id", "model", "checkpoint", "algorithm", "family", "task", "task_version", "doc_id",
    "doc_hash", "prompt_hash", "filter", "metric", "value", "n_choices", "replicate", "dataset_revision", "judge",
    "gold", "choice_ll",
)

INGEST_EVICT_ROWS = 500_000  # from these rows an ingest makes DuckDB evict what it cached (5 x 2.5M rows: 1.9 GB RSS)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, model VARCHAR, checkpoint VARCHAR, algorithm VARCHAR,
    family VARCHAR, replicate INTEGER, results_path VARCHAR, lm_eval_version VARCHAR,
    config JSON, ingested_at TIMESTAMP
);
-- The training step (and epoch) of the checkpoint a run evaluated (NULL: an end point, no step).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS step BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS epoch DOUBLE;
-- The variant's other labels (captrack.labels.VariantLabels), read back by `captrack compare`.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS size VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS data VARCHAR;
CREATE TABLE IF NOT EXISTS run_tasks (
    run_id VARCHAR, task VARCHAR, task_version VARCHAR, output_type VARCHAR, n_docs BIGINT
);
-- The samples file each task's rows came from (path + SHA-256), so per-item texts and per-choice
-- loglikelihoods are read back through the store; stores written before have NULL here.
ALTER TABLE run_tasks ADD COLUMN IF NOT EXISTS samples_path VARCHAR;
ALTER TABLE run_tasks ADD COLUMN IF NOT EXISTS samples_sha256 VARCHAR;
CREATE TABLE IF NOT EXISTS samples (
    run_id VARCHAR, model VARCHAR, checkpoint VARCHAR, algorithm VARCHAR, family VARCHAR,
    task VARCHAR, task_version VARCHAR, doc_id BIGINT, doc_hash VARCHAR, prompt_hash VARCHAR,
    filter VARCHAR, metric VARCHAR, value DOUBLE, n_choices INTEGER, replicate INTEGER,
    dataset_revision VARCHAR
);
-- Stores written before the column existed gain it (NULL for their rows).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS dataset_revision VARCHAR;
-- Judged metrics (captrack judge): `judge` names the judge of a row (NULL: a deterministic metric);
-- `judgements` keeps each verdict's prompt version and, for NaN ones, the reason.
ALTER TABLE samples ADD COLUMN IF NOT EXISTS judge VARCHAR;
-- Multiple-choice items: the option-index gold and the per-option loglikelihoods, typed at ingest so
-- that compare reads numbers, never the samples files (NULL elsewhere and in stores written before).
ALTER TABLE samples ADD COLUMN IF NOT EXISTS gold INTEGER;
ALTER TABLE samples ADD COLUMN IF NOT EXISTS choice_ll DOUBLE[];
-- A fast fingerprint of each samples file (xxh3-128), computed while the file is ingested.
ALTER TABLE run_tasks ADD COLUMN IF NOT EXISTS samples_digest VARCHAR;
CREATE TABLE IF NOT EXISTS judgements (
    run_id VARCHAR, task VARCHAR, doc_id BIGINT, doc_hash VARCHAR, filter VARCHAR, metric VARCHAR,
    judge VARCHAR, prompt VARCHAR, reason VARCHAR
);
"""


@dataclass(frozen=True)
class IngestResult:
    """What one ingest added: run id, model, replicate and per-sample rows."""

    run_id: str
    model: str
    replicate: int
    rows: int
    tasks: int


@dataclass(frozen=True)
class SamplesFile:
    """The lm-eval samples file a run's task was ingested from, and its fingerprint at ingest (None: unknown):
    ``xxh3_128:<hex>`` (captrack.results.runfiles.file_digest), or the bare hex SHA-256 older stores recorded."""

    path: Path
    digest: str | None
    output_type: str


class Store:
    """A DuckDB results store (a file, or ``:memory:``); see `captrack.results.connect` for how it is opened."""

    def __init__(self, path: str | Path = ":memory:", read_only: bool = False) -> None:
        self.path, self.read_only = str(path), read_only
        if self.path != ":memory:" and not read_only:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.con = connect(self.path, read_only)
        self._columns: dict[tuple[str, str], bool] = {}  # (table, column) -> present (a store's columns only grow by _SCHEMA)
        self._threads: int | None = None  # use_threads: kept when the connection is opened again
        self._files: dict[str, dict[tuple[str, str], SamplesFile]] = {}  # samples_files of a read-only store
        if not read_only:
            self.con.execute(_SCHEMA)

    def close(self) -> None:
        """Close the connection."""
        self.con.close()

    def release_memory(self) -> None:
        """Hand back the memory DuckDB kept from the queries so far (its allocator holds it until the database
        closes): a store file is closed and opened again; an in-memory store is left as it is."""
        if self.path != ":memory:":
            self.con.close()
            self.con = connect(self.path, self.read_only, check=False)
            if self._threads is not None:
                self.con.execute(f"SET threads = {self._threads}")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: object, exc: object, trace: object) -> None:
        if isinstance(exc, duckdb.Error):  # the CLI's one-line message names the store (captrack.failures)
            exc.add_note(f"{FILE_NOTE}{self.path}")
        self.close()

    def ingest(
        self, runs: Sequence[Run], labels: VariantLabels, rename: bool = False,
        progress: Callable[[IngestResult], None] | None = None, epoch: float | None = None, fixed: bool = False,
    ) -> list[IngestResult]:
        """Add runs to the store in one transaction under `labels`; re-ingesting a run replaces its rows.

        An empty ``labels.name`` files each run under its own model name, no ``labels.replicate`` under its seed,
        no ``labels.step`` under its checkpoint's step (trainer_state.json), unless `fixed` (a base: never a
        step, even from a checkpoint-N folder); `epoch` goes with ``labels.step``.

        A run is its results file's content: the same run under another model name is refused unless `rename`
        (then it moves to the new name). ``progress`` is called after each run, e.g. to advance a progress bar.

        Raises:
            InputError: a corrupt, truncated or inconsistent samples file (file and line named: not
                UTF-8, duplicate doc ids, non-finite values, proportions outside [0, 1]), or a run
                stored under another name; the store is left exactly as it was.
        """
        read, reported = SamplesRead(), 0
        # A fresh ingest appends whole row groups: the checkpoint's vacuum would rewrite most of the new data to
        # merge them, for nothing. It runs (the default) when this ingest replaces runs, to reclaim their rows.
        replacing = self._stored([run.run_id for run in runs])
        self.con.execute("RESET max_vacuum_tasks" if replacing else "SET max_vacuum_tasks = 0")
        while True:
            results: list[IngestResult] = []
            self.con.execute("BEGIN TRANSACTION")
            try:
                for run in runs:
                    results.append(self._ingest_run(run, labels, rename, read, (epoch, fixed)))
                    if progress is not None and len(results) > reported:  # a repeated read reports each run once
                        progress(results[-1])
                        reported += 1
                self.con.execute("COMMIT")
                if self.path != ":memory:" and sum(r.rows for r in results) >= INGEST_EVICT_ROWS:  # lowered, it evicts
                    with contextlib.suppress(duckdb.Error):  # best effort: what it cannot evict stays
                        self.con.execute("SET memory_limit = '100MB'")
                    self.con.execute("RESET memory_limit")
                return results
            except ReadAgain as again:
                self.con.execute("ROLLBACK")
                read = again.read
            except BaseException:
                self.con.execute("ROLLBACK")
                raise

    def _stored(self, run_ids: list[str]) -> bool:
        """Whether any of the runs is in the store already."""
        found = self.con.execute("SELECT count(*) FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [run_ids]).fetchone()
        return bool(found and found[0])

    def _ingest_run(self, run: Run, labels: VariantLabels, rename: bool, read: SamplesRead,
                    at: tuple[float | None, bool]) -> IngestResult:
        (epoch_given, fixed), model = at, labels.name or run.model_name
        replicate = run.seed if labels.replicate is None else labels.replicate
        stored = self.con.execute("SELECT model FROM runs WHERE run_id = ?", [run.run_id]).fetchone()
        if stored and stored[0] != model and not rename:
            raise InputError(
                f"{run.results_path}: this run (id {run.run_id}, the same results file bytes) is already in the store "
                f"as model {stored[0]!r}; filing it as {model!r} too is not possible (a run is its content). "
                f"Pass --rename to move it from {stored[0]!r} to {model!r}, or ingest a different run (nothing was ingested)."
            )
        for table in ("samples", "run_tasks", "runs", "judgements"):
            self.con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run.run_id])
        position = run_position(run.checkpoint, run.results_path.parent) if labels.step is None and not fixed else None
        step, epoch = (labels.step, epoch_given) if position is None else (position.step, position.epoch)
        self.con.execute(
            """INSERT INTO runs (run_id, model, checkpoint, algorithm, family, replicate, results_path, lm_eval_version,
                                 config, ingested_at, step, epoch, size, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [run.run_id, model, run.checkpoint, labels.algorithm, labels.family, replicate,
             str(run.results_path.resolve()), run.lm_eval_version, json.dumps(run.config, default=str),
             dt.datetime.now(), step, epoch, labels.size, labels.data],
        )
        # Tasks logging the same metric columns are read by one query (DuckDB parallelises
        # across files); a small table maps each file to its task and logged (metric, filter).
        batches: dict[tuple[tuple[str, ...], bool], list[TaskInfo]] = {}
        for task in run.tasks:
            metrics = tuple(sorted({m for m, _ in task.metrics}))
            if metrics:
                batches.setdefault((metrics, task.output_type == "multiple_choice"), []).append(task)
        rows, before = 0, {t.name: file_state(t.samples) for t in run.tasks}
        # Each file is fingerprinted by a second thread while DuckDB reads its window of files (ingest_sql.read_windows).
        with ThreadPoolExecutor(1, thread_name_prefix="captrack-digest") as pool:
            digests: dict[str, Future[str]] = {}
            for (metrics, multiple_choice), tasks in batches.items():
                for window in read_windows(tasks):
                    digests |= {t.name: pool.submit(file_digest, t.samples) for t in window}
                    rows += self._ingest_batch(run, window, metrics, multiple_choice, model, labels, replicate, read)
            digests |= {t.name: pool.submit(file_digest, t.samples) for t in run.tasks if t.name not in digests}
            digest = {t.name: digests[t.name].result() for t in run.tasks}
        self._check_complete(run, before, digest)
        check_one_run_per_step(self.con, run.run_id, run.results_path)
        for task in run.tasks:
            if task.judged is not None:
                rows += self._ingest_judged(run, task, task.judged, model, labels, replicate)
        return IngestResult(run.run_id, model, replicate, rows, len(run.tasks))

    def _ingest_batch(
        self, run: Run, tasks: list[TaskInfo], metrics: tuple[str, ...], multiple_choice: bool,
        model: str, labels: VariantLabels, replicate: int, read: SamplesRead,
    ) -> int:
        logged = pd.DataFrame(
            [(str(t.samples), t.name, t.version, m, f) for t in tasks for m, f in t.metrics],
            columns=["filename", "task", "task_version", "metric", "filter"],
        )
        self.con.register("_logged_df", logged)
        self.con.execute("CREATE OR REPLACE TEMP TABLE _logged AS SELECT * FROM _logged_df")
        self.con.unregister("_logged_df")
        files = [str(t.samples) for t in tasks]
        sql, proportions = samples_insert_sql(metrics, multiple_choice, read.object_size, read.typed)
        params = [run.run_id, model, run.checkpoint, labels.algorithm, labels.family, replicate, files]
        try:
            inserted = self.con.execute(sql, params).fetchone()
        except duckdb.Error as exc:
            again = read.retry(str(exc), multiple_choice)
            if again is not None:
                raise ReadAgain(again) from exc
            raise samples_error([t.samples for t in tasks], exc, proportions) from exc
        return int(inserted[0]) if inserted else 0

    def _ingest_judged(self, run: Run, task: TaskInfo, path: Path, model: str, labels: VariantLabels, replicate: int) -> int:
        """Add the verdicts `captrack judge` wrote for one task: value rows plus their judge, prompt and reason."""
        columns = ("{'doc_id': 'BIGINT', 'doc_hash': 'VARCHAR', 'prompt_hash': 'VARCHAR', 'filter': 'VARCHAR', "
                   "'metric': 'VARCHAR', 'value': 'DOUBLE', 'judge': 'VARCHAR', 'prompt': 'VARCHAR', 'reason': 'VARCHAR'}")
        source = f"read_json(?, format='newline_delimited', columns={columns})"
        try:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE _judged AS SELECT * FROM {source}", [str(path)])
        except duckdb.Error as exc:
            raise InputError(f"{path}: not a readable verdict file ({exc}); re-run `captrack judge` on this run "
                             "(nothing was ingested)") from exc
        self.con.execute(  # a verdict with a reason is NaN, whatever number the file holds
            f"""INSERT INTO samples ({", ".join(SAMPLE_COLUMNS[:17])})
            SELECT ?, ?, ?, ?, ?, ?, ?, doc_id, doc_hash, prompt_hash, "filter", metric,
                   CASE WHEN coalesce(reason, '') = '' THEN coalesce(value, 'nan'::DOUBLE) ELSE 'nan'::DOUBLE END,
                   NULL, ?, (SELECT any_value(dataset_revision) FROM samples WHERE run_id = ? AND task = ?), judge
            FROM _judged""",
            [run.run_id, model, run.checkpoint, labels.algorithm, labels.family, task.name, task.version, replicate,
             run.run_id, task.name],
        )
        self.con.execute(
            """INSERT INTO judgements SELECT ?, ?, doc_id, doc_hash, "filter", metric, judge, prompt,
                   coalesce(reason, '') FROM _judged""",
            [run.run_id, task.name],
        )
        count = self.con.execute("SELECT count(*) FROM _judged").fetchone()
        return int(count[0]) if count else 0

    def judged_summary(self, models: Sequence[str]) -> dict[str, Any]:
        """Per model, task and metric: the judge and prompt, verdict count, NaN count and NaN reasons by code.

        A store written before judged metrics existed (opened read-only) has no verdicts: empty.
        """
        found = self.con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'judgements'").fetchone()
        if not found or not found[0]:
            return {}
        rows = self.con.execute(
            """SELECT r.model, j.task, j.metric, string_agg(DISTINCT j.judge, ', ') AS judge,
                      string_agg(DISTINCT j.prompt, ', ') AS prompt, count(*) AS n,
                      count(*) FILTER (WHERE j.reason <> '') AS nan,
                      list(split_part(j.reason, ':', 1)) FILTER (WHERE j.reason <> '') AS codes
            FROM judgements j JOIN runs r USING (run_id) WHERE r.model IN (SELECT unnest(?::VARCHAR[]))
            GROUP BY ALL ORDER BY ALL""",
            [list(models)],
        ).fetchall()
        out: dict[str, Any] = {}
        for model, task, metric, judge, prompt, n, nan, codes in rows:
            reasons: dict[str, int] = {}
            for code in codes or []:
                reasons[code] = reasons.get(code, 0) + 1
            out.setdefault(model, {}).setdefault(task, {})[metric] = {
                "judge": judge, "prompt": prompt, "n": int(n), "nan": int(nan), "reasons": dict(sorted(reasons.items())),
            }
        return out

    def _check_complete(self, run: Run, before: dict[str, tuple[int, int]], digest: dict[str, str]) -> None:
        """Each doc is logged once per filter, every task has its reported number of docs per (metric, filter),
        and no samples file changed while it was read (its recorded digest is of the bytes ingested)."""
        counted = self.con.execute(  # one pass over the run's rows: rows per task, and the most any key repeats
            """SELECT task, sum(n), max(n) FROM (SELECT task, count(*) AS n FROM samples WHERE run_id = ? AND judge IS NULL
            GROUP BY task, "filter", metric, doc_id) GROUP BY task""", [run.run_id]
        ).fetchall()
        repeated = sorted(task for task, _, most in counted if most > 1)
        if repeated:
            task = next(t for t in run.tasks if t.name == repeated[0])
            raise samples_error([task.samples], InputError("a doc id logged twice"), {})
        found = {task: int(n) for task, n, _ in counted}
        for task in run.tasks:
            per_doc = len(task.metrics)
            rows = int(found.get(task.name, 0))
            self.con.execute(
                """INSERT INTO run_tasks (run_id, task, task_version, output_type, n_docs, samples_path, samples_digest)
                VALUES (?, ?, ?, ?, ?, ?, ?)""",
                [run.run_id, task.name, task.version, task.output_type, rows // max(per_doc, 1),
                 str(task.samples.resolve()), digest[task.name]],
            )
            if file_state(task.samples) != before[task.name]:
                raise InputError(f"{task.samples}: the file changed while it was ingested (is the evaluation still "
                                 "writing it?); ingest it once it is complete (nothing was ingested)")
            if task.expected_docs is not None and rows < task.expected_docs * per_doc:
                raise InputError(
                    f"{task.samples}: {rows // max(per_doc, 1)} logged docs per (metric, filter) but "
                    f"{run.results_path.name} reports {task.expected_docs} docs; the samples file "
                    "looks truncated. Re-run the evaluation (or restore the file) and ingest again."
                )

    def runs(self) -> list[dict[str, Any]]:
        """All runs in the store, oldest first."""
        cur = self.con.execute(
            "SELECT run_id, model, checkpoint, algorithm, family, replicate, results_path "
            "FROM runs ORDER BY ingested_at"
        )
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def samples_files(self, model: str) -> dict[tuple[str, str], SamplesFile]:
        """(run id, task) -> the samples file ingested for it, for every run of `model` (a read-only store's, once:
        a comparison asks for the base's per variant). Stores written before files were recorded give lm-eval's own
        name beside the results file."""
        if self.read_only and model in self._files:
            return dict(self._files[model])
        digest = "coalesce(t.samples_digest, t.samples_sha256)" if self.has_column("run_tasks", "samples_digest") else "t.samples_sha256"
        path_columns = f"t.samples_path, {digest}" if self.has_column("run_tasks", "samples_path") else "NULL, NULL"
        rows = self.con.execute(f"""SELECT t.run_id, t.task, t.output_type, {path_columns}, r.results_path
            FROM run_tasks t JOIN runs r USING (run_id) WHERE r.model = ?""", [model]).fetchall()
        anchor = None if self.path == ":memory:" else Path(self.path).resolve().parent
        self._files[model] = {
            (run_id, task): SamplesFile(stored_path(path, anchor) if path else samples_path(stored_path(results, anchor), task),
                                        sha, str(kind or ""))
            for run_id, task, kind, path, sha, results in rows
        }
        return dict(self._files[model])

    def has_column(self, table: str, column: str) -> bool:
        """Whether the store's `table` has `column` (older stores lack the later ones), asked once per store."""
        if (table, column) not in self._columns:
            found = self.con.execute("SELECT count(*) FROM duckdb_columns() WHERE table_name = ? AND column_name = ?",
                                     [table, column]).fetchone()
            self._columns[(table, column)] = bool(found and found[0])
        return self._columns[(table, column)]

    def use_threads(self, threads: int) -> None:
        """Run this store's queries on at most `threads` threads (processes sharing the cores)."""
        self._threads = max(1, int(threads))
        self.con.execute(f"SET threads = {self._threads}")

    def models(self) -> list[str]:
        """Names of the models (checkpoints) in the store."""
        return [r[0] for r in self.con.execute("SELECT DISTINCT model FROM runs ORDER BY 1").fetchall()]

    def export_parquet(self, path: str | Path) -> None:
        """Write the tidy per-sample table to a Parquet file."""
        self.con.execute(f"COPY samples TO {quote_literal(str(path))} (FORMAT parquet)")

