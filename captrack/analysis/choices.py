"""Per-choice loglikelihoods of paired multiple-choice items, read back from the runs' samples files.

The store holds scores; the per-option loglikelihoods that distribution-level diagnostics need
stay in lm-eval's samples files. They are read here, for multiple-choice tasks only, pairing base
and variant items on (doc_hash, occurrence, filter) within one replicate.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from captrack.analysis.distribution import loglikelihoods_from_resps
from captrack.store import Store

__all__ = ["paired_choices"]

_READ = """SELECT doc_id, doc_hash, "filter", target, filtered_resps,
       row_number() OVER (PARTITION BY "filter", doc_hash ORDER BY doc_id) AS occ
FROM read_json(?, format='newline_delimited', maximum_object_size=1073741824,
               columns={'doc_id': 'BIGINT', 'doc_hash': 'VARCHAR', 'filter': 'VARCHAR',
                        'target': 'JSON', 'filtered_resps': 'JSON'})"""


def _mc_runs(store: Store, model: str) -> pd.DataFrame:
    return store.con.execute(
        """SELECT t.task, r.replicate, r.results_path FROM run_tasks t JOIN runs r USING (run_id)
        WHERE r.model = ? AND t.output_type = 'multiple_choice' ORDER BY t.task, r.replicate""",
        [model],
    ).df()


def _samples_path(results_path: str, task: str) -> Path:
    results = Path(results_path)
    return results.with_name(f"samples_{task}_{results.stem.removeprefix('results_')}.jsonl")


def paired_choices(store: Store, base: str, variant: str, algorithm: str, warnings: list[str]) -> pd.DataFrame:
    """Rows of (variant, algorithm, task, doc_hash, gold, base_ll, variant_ll) for every MC task.

    Uses the lowest replicate both models have; items whose gold is not an option index are skipped
    (counted in `warnings`), as are tasks whose samples files are gone.
    """
    base_runs, var_runs = _mc_runs(store, base), _mc_runs(store, variant)
    merged = base_runs.merge(var_runs, on=["task", "replicate"], suffixes=("_b", "_v"))
    frames = []
    for task, rows in merged.groupby("task", sort=True):
        first = rows.iloc[0]
        paths = [_samples_path(first["results_path_b"], str(task)), _samples_path(first["results_path_v"], str(task))]
        if not all(p.is_file() for p in paths):
            warnings.append(f"{variant}: samples files of {task} are gone; no distribution diagnostics for it")
            continue
        joined = store.con.execute(
            f"""WITH b AS ({_READ}), v AS ({_READ})
            SELECT b.doc_hash, b.target, b.filtered_resps AS base_resps, v.filtered_resps AS variant_resps
            FROM b JOIN v ON b.doc_hash = v.doc_hash AND b.occ = v.occ AND b."filter" = v."filter"
            WHERE b."filter" = (SELECT min("filter") FROM b) ORDER BY b.doc_id""",
            [str(paths[0]), str(paths[1])],
        ).fetchall()
        frames.append(_rows(variant, algorithm, str(task), joined, warnings))
    columns = ["variant", "algorithm", "task", "doc_hash", "gold", "base_ll", "variant_ll"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _rows(variant: str, algorithm: str, task: str, joined: list[tuple[Any, ...]], warnings: list[str]) -> pd.DataFrame:
    out, skipped = [], 0
    for doc_hash, target, base_resps, variant_resps in joined:
        gold = json.loads(target) if isinstance(target, str) else target
        base_ll = loglikelihoods_from_resps(json.loads(base_resps))
        variant_ll = loglikelihoods_from_resps(json.loads(variant_resps))
        if isinstance(gold, str) and gold.strip().isdigit():
            gold = int(gold)
        if not isinstance(gold, int) or not 0 <= gold < len(base_ll) or len(base_ll) != len(variant_ll):
            skipped += 1
            continue
        out.append({"variant": variant, "algorithm": algorithm, "task": task, "doc_hash": doc_hash,
                    "gold": gold, "base_ll": base_ll, "variant_ll": variant_ll})
    if skipped:
        warnings.append(f"{variant}: {task}: {skipped} items without an option-index gold skipped in distribution diagnostics")
    return pd.DataFrame(out)
