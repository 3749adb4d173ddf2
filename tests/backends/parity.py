"""Read two runs written by parity_driver.py and measure how far apart they are."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Parity:
    """Differences between a reference run and a candidate run on the same tasks and docs."""

    max_ll_diff: float  # largest |loglikelihood difference| over every loglikelihood request
    n_loglikelihoods: int
    generation_mismatches: list[str]  # "task doc_id: 'ref' != 'got'"
    n_generations: int
    metric_mismatches: list[str]  # per-sample or aggregated metric values that differ


def _load(run: Path) -> tuple[dict[str, dict[int, dict[str, Any]]], dict[str, Any]]:
    """Per-sample rows by task and doc id, and aggregated results, from a driver JSON file or an
    lm-eval --output_path folder (samples_*.jsonl, results_*.json)."""
    if run.is_file():
        data = json.loads(run.read_text())
        rows_by_task, results = data["samples"], data["results"]
    else:
        rows_by_task = {}
        for path in sorted(run.rglob("samples_*.jsonl")):
            task = path.name[len("samples_"):].rsplit("_", 1)[0]
            rows_by_task[task] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        (results_file,) = sorted(run.rglob("results_*.json"))
        results = json.loads(results_file.read_text())["results"]
    samples = {task: {row["doc_id"]: row for row in rows} for task, rows in rows_by_task.items()}
    return samples, results


def compare_runs(reference: Path, candidate: Path) -> Parity:
    """Compare per-sample responses and metrics of `candidate` with `reference`."""
    (ref, ref_agg), (got, got_agg) = _load(reference), _load(candidate)
    if set(ref) != set(got):
        raise AssertionError(f"different tasks: {sorted(ref)} vs {sorted(got)}")
    max_diff, n_ll, n_gen = 0.0, 0, 0
    gen_bad: list[str] = []
    metric_bad: list[str] = []
    for task, docs in ref.items():
        if set(docs) != set(got[task]):
            raise AssertionError(f"{task}: different doc ids")
        for doc_id, row in docs.items():
            other = got[task][doc_id]
            for mine, theirs in zip(row["resps"], other["resps"], strict=True):
                first, second = mine[0], theirs[0]
                if isinstance(first, list):  # loglikelihood: [logprob, is_greedy] as strings
                    max_diff = max(max_diff, abs(float(first[0]) - float(second[0])))
                    n_ll += 1
                else:
                    n_gen += 1
                    if first != second:
                        gen_bad.append(f"{task} {doc_id}: {first!r} != {second!r}")
            for metric in row["metrics"]:
                if float(row[metric]) != float(other[metric]):
                    metric_bad.append(f"{task} {doc_id} {metric}: {row[metric]} != {other[metric]}")
    for task, values in ref_agg.items():
        for key, value in values.items():
            if "stderr" not in key and key != "alias" and got_agg[task].get(key) != value:
                metric_bad.append(f"{task} aggregate {key}: {value} != {got_agg[task].get(key)}")
    return Parity(max_diff, n_ll, gen_bad, n_gen, metric_bad)
