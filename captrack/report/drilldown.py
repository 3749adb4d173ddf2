"""Drill-down data: which items a variant forgot (1→0) or gained (0→1), with their text.

Items come from the store; prompts, gold answers and responses are read back from the runs'
own samples files (only for the flipped items), so the store stays a table of numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

__all__ = ["flipped_items", "item_texts"]


def flipped_items(
    con: duckdb.DuckDBPyConnection, base: str, variant: str, task: str, metric: str,
    lower_is_better: bool = False, limit: int = 50,
) -> tuple[pd.DataFrame, int]:
    """The first `limit` forgotten/gained items of (task, metric) and how many flipped in all.

    Returns a frame with doc_id, doc_hash, change ('forgotten' | 'gained'), replicate, base_run, variant_run.
    """
    good = "< 0.5" if lower_is_better else "> 0.5"
    ranked = """SELECT *, row_number() OVER (PARTITION BY filter, replicate, doc_hash ORDER BY doc_id) AS occ
                FROM samples WHERE model = ? AND task = ? AND metric = ? AND NOT isnan(value)"""
    frame = con.execute(
        f"""WITH b AS ({ranked}), v AS ({ranked})
        SELECT b.doc_id, b.doc_hash, CASE WHEN b.value {good} THEN 'forgotten' ELSE 'gained' END AS change,
               b.replicate, b.run_id AS base_run, v.run_id AS variant_run
        FROM b JOIN v ON b.task_version = v.task_version AND b.doc_hash = v.doc_hash AND b.occ = v.occ
                     AND b.filter = v.filter AND b.replicate = v.replicate
        WHERE b.filter = (SELECT CASE WHEN bool_or(filter = 'none') THEN 'none' ELSE min(filter) END FROM b)
          AND (b.value {good}) <> (v.value {good})
        ORDER BY change DESC, b.replicate, b.doc_id""",
        [base, task, metric, variant, task, metric],
    ).df()
    return frame.head(limit), len(frame)


def _samples_file(results_path: str, task: str) -> Path:
    results = Path(results_path)
    return results.with_name(f"samples_{task}_{results.stem.removeprefix('results_')}.jsonl")


def item_texts(results_path: str, task: str, doc_ids: list[int]) -> dict[int, dict[str, str]]:
    """Prompt, gold and response of the given docs, read from a run's samples file.

    Missing or moved files give an empty mapping (the page then says the text is unavailable).
    """
    path = _samples_file(results_path, task)
    if not doc_ids or not path.is_file():
        return {}
    rows = duckdb.execute(
        """SELECT doc_id, target, arguments, filtered_resps
        FROM read_json(?, format='newline_delimited',
                       columns={'doc_id': 'BIGINT', 'target': 'JSON', 'arguments': 'JSON', 'filtered_resps': 'JSON'},
                       maximum_object_size=1073741824)
        WHERE doc_id IN (SELECT unnest(?::BIGINT[]))""",
        [str(path), doc_ids],
    ).fetchall()
    return {int(doc_id): _texts(target, arguments, resps) for doc_id, target, arguments, resps in rows}


def _texts(target: Any, arguments: Any, resps: Any) -> dict[str, str]:
    args = json.loads(arguments) if isinstance(arguments, str) else arguments or {}
    gold = json.loads(target) if isinstance(target, str) else target
    filtered = json.loads(resps) if isinstance(resps, str) else resps or []
    requests = [args[k] for k in sorted(args, key=lambda k: int(k.rsplit("_", 1)[-1]))]
    prompt = str(requests[0].get("arg_0", "")) if requests else ""
    is_choice = len(requests) > 1 and all(isinstance(r, list) and len(r) == 2 for r in filtered)
    if is_choice:
        choices = [str(r.get("arg_1", "")) for r in requests]
        scores = [float(r[0]) for r in filtered]
        response = choices[max(range(len(scores)), key=scores.__getitem__)]
        if isinstance(gold, int) and 0 <= gold < len(choices):
            gold = choices[gold]
        prompt += "\n\nOptions: " + " | ".join(c.strip() for c in choices)
    else:
        response = filtered[0] if isinstance(filtered, list) and filtered else filtered
    return {"prompt": prompt, "gold": str(gold), "response": str(response)}
