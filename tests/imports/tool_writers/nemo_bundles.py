"""Write NeMo Evaluator 0.3.0 benchmark folders with nel's own writer, and what nel itself reads back from them.

Run by the Python 3.12 tool environment (tests/imports/conftest.py), not by captrack's:
``python nemo_bundles.py SPEC.json OUT_DIR``. SPEC: ``{"runs": {model: {benchmark: [record, ...]}}, "repeats": k,
"pairs": [[base model, candidate model], ...]}``, each record a ``results.jsonl`` line (problem_idx, repeat,
reward, prompt, model_response, expected_answer, ...). For every model and benchmark this writes
``OUT_DIR/<model>/<benchmark>/eval-<run_id>.json`` + ``results.jsonl`` exactly as ``nel eval`` does
(``headline_score_metrics`` -> ``build_artifact_bundle`` -> ``write_all``), then ``OUT_DIR/reported.json``:
nel's own reading of each folder (``load_paired_records``: reward per (problem_idx, repeat)) and, per pair,
nel compare's flip report (``build_flip_report``: the regressed and improved (problem_idx, repeat) keys).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import nemo_evaluator
from nemo_evaluator.engine.artifacts import build_artifact_bundle, write_all
from nemo_evaluator.engine.comparison import build_flip_report, load_paired_records
from nemo_evaluator.metrics.headline import headline_score_metrics


def main(spec_path: str, out: str) -> None:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    root = Path(out)
    reported: dict = {"version": nemo_evaluator.__version__, "rewards": {}, "flips": {}}
    for model, benchmarks in spec["runs"].items():
        for benchmark, records in benchmarks.items():
            per_problem = defaultdict(list)
            for r in records:
                per_problem[r["problem_idx"]].append(float(r["reward"]))
            config = {"benchmark": benchmark, "model": model, "repeats": spec.get("repeats", 1), "temperature": 0.0}
            bundle = build_artifact_bundle(benchmark, records, headline_score_metrics(per_problem, config["repeats"]), config)
            bundle["_results"] = records
            folder = root / model / benchmark.replace("://", "_")
            write_all(bundle, folder)
            paired = load_paired_records(folder)
            reported["rewards"][f"{model}/{benchmark}"] = [[k[0], k[1], v["reward"]] for k, v in sorted(paired.items())]
    for base, cand in spec.get("pairs", []):
        for benchmark in spec["runs"][base]:
            name = benchmark.replace("://", "_")
            report = build_flip_report(load_paired_records(root / base / name), load_paired_records(root / cand / name))
            reported["flips"][f"{cand}/{benchmark}"] = {
                "regressed": sorted([e.problem_idx, e.repeat] for e in report.regressions),
                "improved": sorted([e.problem_idx, e.repeat] for e in report.improvements),
                "contingency": report.contingency,
            }
    (root / "reported.json").write_text(json.dumps(reported), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
