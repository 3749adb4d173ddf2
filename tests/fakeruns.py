"""Write synthetic lm-eval output (results_*.json + samples_*.jsonl) for tests and benchmarks.

The files have the exact shape lm-eval 0.4.13 writes with --log_samples, so ingest reads them the
way it reads real runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["C1_PAIR", "FakeTask", "run_quietly", "write_arrays", "write_run"]


@dataclass
class FakeTask:
    """A task to fake: per-metric value lists (one value per doc; None → JSON null)."""

    name: str
    values: Mapping[str, Sequence[float | bool | None]]
    output_type: str = "multiple_choice"
    n_choices: int = 4
    version: float = 1.0
    filter: str = "none"
    doc_ids: Sequence[int] | None = None
    doc_text: Mapping[int, str] = field(default_factory=dict)
    responses: Mapping[int, str] = field(default_factory=dict)  # generate_until: the model's text per doc
    choice_lls: Mapping[int, Sequence[float]] = field(default_factory=dict)  # multiple_choice: per-option loglik
    revision: str | None = None  # the dataset revision each doc carries (official tasks do)
    docs: Mapping[int, dict] = field(default_factory=dict)  # the full doc per doc id (e.g. a generated probe item)
    targets: Mapping[int, object] = field(default_factory=dict)  # lm-eval's logged target per doc id (default "0")


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def write_run(
    out: Path, model: str, tasks: Sequence[FakeTask], seed: int = 0, date_id: str = "2026-01-01T00-00-00.000000"
) -> Path:
    """Write one run under ``out/<model>/`` and return the results file path."""
    folder = out / model.replace("/", "__")
    folder.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, float | str]] = {}
    for task in tasks:
        n = len(next(iter(task.values.values())))
        ids = list(task.doc_ids) if task.doc_ids is not None else list(range(n))
        with (folder / f"samples_{task.name}_{date_id}.jsonl").open("w") as handle:
            for row, doc_id in enumerate(ids):
                doc = dict(task.docs.get(doc_id) or {"question": task.doc_text.get(doc_id, f"{task.name} question {doc_id}")})
                if task.revision is not None:
                    doc["revision"] = task.revision
                prompt = str(doc.get("question") or doc.get("prompt", ""))
                if task.output_type == "multiple_choice":
                    lls = task.choice_lls.get(doc_id, [-1.0] * task.n_choices)
                    resps: list = [[str(float(x)), "False"] for x in lls]
                else:
                    resps = [task.responses.get(doc_id, f"response to {doc_id}")]
                target = task.targets.get(doc_id, "0")
                line = {
                    "doc_id": doc_id,
                    "doc": doc,
                    "target": target,
                    "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": " A"}},
                    "resps": [resps],
                    "filtered_resps": resps,
                    "filter": task.filter,
                    "metrics": list(task.values),
                    "doc_hash": _hash(json.dumps(doc, indent=2)),
                    "prompt_hash": _hash(prompt),
                    "target_hash": _hash(str(target)),
                }
                line.update({m: vals[row] for m, vals in task.values.items()})
                handle.write(json.dumps(line) + "\n")
        results[task.name] = {"alias": task.name}
        for metric, vals in task.values.items():
            nums = [float(v) for v in vals if isinstance(v, (int, float))]
            results[task.name][f"{metric},{task.filter}"] = sum(nums) / max(len(nums), 1)
            results[task.name][f"{metric}_stderr,{task.filter}"] = "N/A"
    payload = {
        "results": results,
        "configs": {t.name: {"task": t.name, "output_type": t.output_type, "metadata": {"version": t.version}} for t in tasks},
        "versions": {t.name: t.version for t in tasks},
        "n-samples": {
            t.name: {"original": len(next(iter(t.values.values()))), "effective": len(next(iter(t.values.values())))}
            for t in tasks
        },
        "config": {"model": "hf", "model_args": f"pretrained={model}", "random_seed": seed},
        "model_name": model,
        "lm_eval_version": "0.4.13",
    }
    path = folder / f"results_{date_id}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path


C1_PAIR = (("captrack_probe_c1_facts", "acc", "multiple_choice"),
           ("captrack_probe_c1_skills", "exact_match", "generate_until"))
"""Two members of one capability (C1) of different output types: what the end-to-end calibration scripts simulate."""


def write_arrays(folder: Path, name: str, values: Mapping[str, Sequence[float]],
                 tasks: Sequence[tuple[str, str, str]] = C1_PAIR) -> None:
    """A run of `tasks` (name, metric, output type) whose per-doc values are `values[name]`."""
    write_run(folder, name, [FakeTask(task, {metric: [float(v) for v in values[task]]}, output_type=kind)
                             for task, metric, kind in tasks])


def run_quietly(argv: list[str]) -> None:
    """`captrack ARGV` in this process, its output kept back unless it fails (SystemExit with its tail)."""
    import contextlib
    import io

    from captrack.cli import main

    buffer = io.StringIO()
    with contextlib.redirect_stderr(buffer), contextlib.redirect_stdout(buffer):
        status = main(argv)
    if status != 0:
        raise SystemExit(f"captrack {' '.join(argv[:2])} failed: {buffer.getvalue()[-2000:]}")
