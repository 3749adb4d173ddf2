"""The SQL that reads lm-eval samples files into the tidy per-sample table (one query per batch of files).

Everything the comparison reads per item is typed here, once, at ingest: the metric values, k (the
item's option count), and for multiple-choice tasks the option-index gold and the per-option
loglikelihoods (``choice_ll DOUBLE[]``), so that `compare` never re-parses a samples file.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from captrack.results.runfiles import TaskInfo, file_state
from captrack.results.sqlvalues import proportions_of, quote_literal, value_sql

__all__ = ["CHOICE_LL_SQL", "DEFAULT_OBJECT_SIZE", "GOLD_SQL", "INGESTED_COLUMNS", "LARGE_OBJECT_SIZE", "READ_WINDOW_BYTES",
           "TYPED_CHOICE_LL_SQL", "ReadAgain", "SamplesRead", "read_windows", "samples_insert_sql"]

DEFAULT_OBJECT_SIZE = 16 << 20
"""DuckDB's own per-line buffer limit: what a samples file is read with first (bigger buffers cost time and memory)."""
LARGE_OBJECT_SIZE = 1 << 30
"""The limit a read is repeated with when a line is longer than DEFAULT_OBJECT_SIZE (long-context tasks)."""

INGESTED_COLUMNS = (
    "run_id", "model", "checkpoint", "algorithm", "family", "task", "task_version", "doc_id",
    "doc_hash", "prompt_hash", "filter", "metric", "value", "n_choices", "replicate", "dataset_revision",
    "gold", "choice_ll",
)

READ_WINDOW_BYTES = 1 << 30
"""A run's samples files are INSERTed this many bytes at a time, each window fingerprinted beside its INSERT
(captrack.results.store): the fingerprint thread then reads what DuckDB reads within seconds, while it is in the
page cache. Fingerprinting every file of a run ahead let the thread run gigabytes ahead of DuckDB, and on runs
larger than the page cache each file came from disk twice (issue 44: 10M records read 51 GiB of 35 GiB)."""


def read_windows(tasks: list[TaskInfo]) -> list[list[TaskInfo]]:
    """`tasks` in their order, cut into runs of files of about READ_WINDOW_BYTES together (a larger file alone).

    INSERTed one after the other, the windows give the table its rows in the order one INSERT of all gave."""
    windows: list[list[TaskInfo]] = []
    size = READ_WINDOW_BYTES
    for task in tasks:
        if size >= READ_WINDOW_BYTES:
            windows.append([])
            size = 0
        windows[-1].append(task)
        size += file_state(task.samples)[0]
    return windows


@dataclass(frozen=True)
class SamplesRead:
    """How an ingest reads samples files: option loglikelihoods typed by the JSON reader (else parsed from
    JSON), and DuckDB's per-line buffer."""

    typed: bool = True
    object_size: int = DEFAULT_OBJECT_SIZE

    def retry(self, error: str, multiple_choice: bool) -> SamplesRead | None:
        """The read to repeat the ingest with after DuckDB raised `error` reading a batch, or None when no other
        read helps: a file logged otherwise than the typed read expects, or a line longer than the buffer."""
        if self.typed and multiple_choice and "JSON transform error" in error:
            return replace(self, typed=False)
        if "maximum_object_size" in error and self.object_size < LARGE_OBJECT_SIZE:
            return replace(self, object_size=LARGE_OBJECT_SIZE)
        return None


class ReadAgain(Exception):
    """The samples files need another read (`read`). A failed statement ends DuckDB's transaction, so the whole
    ingest is repeated with it."""

    def __init__(self, read: SamplesRead) -> None:
        super().__init__(read)
        self.read = read


# lm-eval logs each option as [loglikelihood, is_greedy] (strings or numbers); a bare value is read as is.
# An entry that is no number gives NULL in the list (compare skips such items, saying so).
CHOICE_LL_SQL = """CASE WHEN json_type(filtered_resps, '$[0]') = 'ARRAY'
    THEN list_transform(json_extract_string(filtered_resps, '$[*][0]'), lambda x: TRY_CAST(x AS DOUBLE))
    ELSE list_transform(CASE WHEN json_type(filtered_resps) = 'ARRAY' THEN json_extract(filtered_resps, '$[*]') END,
        lambda e: TRY_CAST(CASE WHEN json_type(e) = 'ARRAY' THEN e ->> 0 ELSE e ->> '$' END AS DOUBLE)) END"""
# The typed read: lm-eval's [[loglikelihood, is_greedy], ...] parsed by the JSON reader straight into lists of
# text (a number is read as its text), so no JSON is re-parsed; a file logged otherwise makes that read fail
# (captrack.results.store then reads the whole ingest again the general way, CHOICE_LL_SQL).
TYPED_CHOICE_LL_SQL = "list_transform(filtered_resps, lambda pair: TRY_CAST(pair[1] AS DOUBLE))"
# The gold as an option index: a JSON integer (or boolean), or a string of digits ("2"); NULL otherwise.
GOLD_SQL = """CASE json_type(target)
    WHEN 'BIGINT' THEN TRY_CAST(target AS INTEGER) WHEN 'UBIGINT' THEN TRY_CAST(target AS INTEGER)
    WHEN 'BOOLEAN' THEN CASE WHEN target::BOOLEAN THEN 1 ELSE 0 END
    WHEN 'VARCHAR' THEN CASE WHEN regexp_full_match(trim(target ->> '$'), '[0-9]+')
                             THEN TRY_CAST(trim(target ->> '$') AS INTEGER) END END"""


def samples_insert_sql(metrics: tuple[str, ...], multiple_choice: bool, object_size: int,
                       typed: bool = True) -> tuple[str, dict[str, bool]]:
    """The INSERT of one batch of samples files (parameters: the run's labels, then the file list), and
    which metrics are proportions (checked to lie in [0, 1]).

    The batch's files are mapped to their task and logged (metric, filter) by temp table ``_logged``.
    With `typed`, a multiple-choice batch's ``filtered_resps`` are read as lists of [loglikelihood,
    is_greedy] (TYPED_CHOICE_LL_SQL; DuckDB raises on a file logged otherwise), else as JSON.
    """
    # The dataset revision a task's docs carry (official tasks: the mirror's; NULL where none).
    # k (n_choices): the doc's own options wherever it lists them (a generated answer letter or yes/no
    # counts as much as a loglikelihood choice); else, for multiple_choice, the options scored.
    columns = {"doc_id": "BIGINT", "doc_hash": "VARCHAR", "prompt_hash": "VARCHAR", "filter": "VARCHAR",
               "doc": "STRUCT(revision VARCHAR, choices JSON)"}
    columns |= {m: "JSON" for m in metrics}
    scored, gold, choice_ll = "NULL::INTEGER", "NULL::INTEGER", "NULL::DOUBLE[]"
    if multiple_choice and typed:
        columns |= {"filtered_resps": "VARCHAR[][]", "target": "JSON"}
        scored, gold, choice_ll = "len(filtered_resps)::INTEGER", GOLD_SQL, TYPED_CHOICE_LL_SQL
    elif multiple_choice:
        columns |= {"filtered_resps": "JSON", "target": "JSON"}
        scored, gold, choice_ll = "json_array_length(filtered_resps)::INTEGER", GOLD_SQL, CHOICE_LL_SQL
    # json_array_length is 0 for a value that is no array (a string, an object).
    choices = f"CASE WHEN json_array_length(doc.choices) >= 2 THEN json_array_length(doc.choices)::INTEGER ELSE {scored} END"
    struct = "{" + ", ".join(f"'{k}': '{v}'" for k, v in columns.items()) + "}"
    proportions = proportions_of(metrics)
    names, values = [quote_literal(m) for m in metrics], [value_sql(m, proportions[m]) for m in metrics]
    if len(metrics) == 1:
        metric, value = names[0], values[0]
    else:  # one row per (doc, metric): two lists unnested side by side (a LATERAL join would materialise the scan)
        metric, value = f"unnest([{', '.join(names)}])", f"unnest([{', '.join(values)}])"
    sql = f"""
        INSERT INTO samples ({", ".join(INGESTED_COLUMNS)})
        SELECT ?, ?, ?, ?, ?, l.task, l.task_version, s.doc_id, s.doc_hash, s.prompt_hash,
               s."filter", s.metric, s.value, s.n_choices, ?, s.revision, s._gold, s._choice_ll
        FROM (SELECT doc_id, doc_hash, prompt_hash, "filter", filename, doc.revision AS revision,
                     {choices} AS n_choices, {gold} AS _gold, {choice_ll} AS _choice_ll, {metric} AS metric, {value} AS value
              FROM read_json(?, format='newline_delimited', columns={struct}, filename=true,
                             maximum_object_size={object_size})) AS s
        JOIN _logged AS l ON l.filename = s.filename AND l.metric = s.metric AND l."filter" = s."filter"
    """
    return sql, proportions
