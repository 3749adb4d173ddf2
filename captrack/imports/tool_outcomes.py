"""Another tool's own per-item outcomes, written as an lm-eval run folder that captrack ingests and compares.

The formats of other evaluation tools (NeMo Evaluator, Inspect, lighteval, Every-Eval-Ever) carry the
tool's verdict on every item. `captrack import` takes those verdicts as the scores (unless `--rescore`
asks captrack's task to score the responses again): one :class:`Outcome` per (task, item, replicate),
written as lm-eval's ``results_<id>.json`` + ``samples_<task>_<id>.jsonl``, one results file per
replicate (its ``random_seed`` is the replicate, so repeats and epochs pair replicate by replicate).

The outcome is stored as metric ``outcome`` (captrack.metrics.tool_outcome: higher is better, in [0, 1]) in every
run, whatever values it holds, so that two runs of one tool pair even when only one has partial credit:
where every paired change is 0/1 compare gives the binary statistics (transitions, McNemar, the score
interval), otherwise a score's. A value outside [0, 1] is refused. An item the tool left unscored (an
errored sample, a missing score) is NaN, never 0. The results file says where the values
came from (``captrack_import.outcomes``), and so does the board's run list.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.backends.recorded_answers import missing_message
from captrack.errors import InputError, UnknownNameError
from captrack.results.runfiles import results_path_of, samples_path

__all__ = ["METRIC", "Outcome", "check_unique", "outcome_value", "select_task", "write_outcomes"]

METRIC = "outcome"


@dataclass(frozen=True)
class Outcome:
    """One item's outcome as the other tool scored it.

    `item` is the tool's own identity of the item (NeMo's ``problem_idx``, Inspect's sample ``id``, lighteval's
    doc id, Every-Eval-Ever's ``sample_id``); `index` is lm-eval's doc index where the tool keeps it (else the
    item's position); `value` is NaN where the tool left the item unscored.
    """

    task: str
    item: str
    replicate: int
    value: float
    index: int
    response: str = ""
    prompt: str = ""
    target: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


def outcome_value(where: str, value: Any) -> float:
    """A tool's per-item outcome as a number: booleans 1/0, numbers as they are, null as NaN (unscored).

    Raises:
        InputError: text, a list or an object, or a non-finite number (the place named).
    """
    if value is None:
        return math.nan
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        number = float(value)
        if math.isnan(number):
            return math.nan
        if not 0.0 <= number <= 1.0:
            raise InputError(f"{where}: outcome {value!r} is outside [0, 1]; captrack compares a tool's per-item outcomes "
                             "as proportions (1 correct, 0 not)")
        return number
    raise InputError(f"{where}: outcome {json.dumps(value, default=str)[:60]} ({type(value).__name__}) is not a number")


def select_task(src: Path, outcomes: list[Outcome], task: str | None) -> list[Outcome]:
    """Only `task`'s outcomes, when given.

    Raises:
        InputError: the source holds no item.
        UnknownNameError: `task` is not in the source (its tasks listed).
    """
    if not outcomes:
        raise InputError(f"{src}: holds no scored items; nothing was written")
    if task is None:
        return outcomes
    kept = [o for o in outcomes if o.task == task]
    if not kept:
        raise UnknownNameError(f"task in {src}", task, {o.task for o in outcomes})
    return kept


def check_unique(src: Path, outcomes: Sequence[Outcome]) -> None:
    """Every (task, item, replicate) once.

    Raises:
        InputError: the items given more than once, listed.
    """
    counts = Counter((o.task, o.item, o.replicate) for o in outcomes)
    twice = [f"{task}/{item} (replicate {rep})" for (task, item, rep), n in counts.items() if n > 1]
    if twice:
        raise InputError(missing_message(f"{src}: items with more than one outcome", twice,
                                         "each item once per repeat or epoch; nothing was written"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _sample_line(o: Outcome, metric: str) -> dict[str, Any]:
    doc = {"id": o.item, "prompt": o.prompt, "gold": o.target, **dict(o.extra)}
    return {
        "doc_id": o.index, "doc": doc, "target": o.target,
        "arguments": {"gen_args_0": {"arg_0": o.prompt, "arg_1": {}}},
        "resps": [[o.response]], "filtered_resps": [o.response], "filter": "none", "metrics": [metric],
        metric: None if math.isnan(o.value) else o.value,
        "doc_hash": _sha(f"{o.task}\n{o.item}"), "prompt_hash": _sha(o.prompt), "target_hash": _sha(o.target),
    }


def _results(task_metric: Mapping[str, str], rows: Mapping[str, list[Outcome]], name: str, replicate: int,
             provenance: Mapping[str, Any], note: str) -> dict[str, Any]:
    results, configs = {}, {}
    for task, metric in task_metric.items():
        scored = [o.value for o in rows[task] if not math.isnan(o.value)]
        results[task] = {"alias": task, f"{metric},none": sum(scored) / len(scored) if scored else None}
        configs[task] = {"task": task, "output_type": "generate_until", "metric_list": [{"metric": metric}],
                         "repeats": 1, "metadata": {"version": "imported"}}
    return {
        "results": results, "configs": configs, "versions": {t: "imported" for t in task_metric},
        "n-samples": {t: {"original": len(rows[t]), "effective": len(rows[t])} for t in task_metric},
        "config": {"model": "captrack-import", "model_args": {"pretrained": name}, "random_seed": replicate},
        "model_name": name, "lm_eval_version": "",
        "captrack_import": {**provenance, "outcomes": note, "replicate": replicate,
                            "metrics": dict(task_metric)},
    }


def write_outcomes(outcomes: list[Outcome], folder: Path, name: str, provenance: Mapping[str, Any], note: str) -> Path:
    """Write `outcomes` under `folder/<name>/` as lm-eval files, one results file per replicate; the first returned.

    `note` says what the values are (``"NeMo Evaluator's reward per (problem_idx, repeat)"``).
    """
    by_task: dict[str, list[Outcome]] = {}
    for o in outcomes:
        by_task.setdefault(o.task, []).append(o)
    task_metric = {t: METRIC for t in sorted(by_task)}
    model_dir = folder / "".join(c if c.isalnum() or c in "-_." else "__" for c in name)
    model_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for replicate in sorted({o.replicate for o in outcomes}):
        stamp = f"imported-r{replicate}"
        rows = {t: sorted((o for o in by_task[t] if o.replicate == replicate), key=lambda o: (o.index, o.item))
                for t in task_metric}
        present = {t: m for t, m in task_metric.items() if rows[t]}
        results = results_path_of(model_dir, stamp)
        for task in present:
            text = "".join(json.dumps(_sample_line(o, present[task]), ensure_ascii=False) + "\n" for o in rows[task])
            samples_path(results, task).write_text(text, encoding="utf-8")
        body = _results(present, rows, name, replicate, provenance, note)
        results.write_text(json.dumps(body, indent=2, ensure_ascii=False), encoding="utf-8")
        written.append(results)
    return written[0]
