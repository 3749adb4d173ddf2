"""Benchmark: `captrack import` of each shared MMLU-Pro outputs file (12,032 items) and its agreement.

    python tests/benchmarks/bench_import.py [--workdir /tmp/captrack-import] [--only Meta-Llama-3_1-8B]

Builds `mmlu_pro.full` from $CAPTRACK_SHARED/data, imports each model_outputs_*.zip under
data/mmlu_pro_outputs with the replay backend (in this process) and prints, per file, the import
time and how many items' verdicts equal captrack's scorer called directly on `generated_text`. Then,
for Llama-3.1-8B -> Instruct, the accuracies and n11/n10/n01/n00 counted from the two samples files.
It asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from shared_paths import shared_dir

from captrack.imports import import_run
from captrack.metrics import score
from captrack.official.build import build_mirror
from captrack.official.mirror import read_rows
from captrack.official.tasks import scoring_doc


def _verdicts(samples: Path) -> dict[str, float]:
    """Doc id -> acc, from an lm-eval samples file."""
    out = {}
    with samples.open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            out[row["doc"]["id"]] = float(row["acc"])
    return out


def _direct(zip_path: Path, docs: dict[str, dict]) -> dict[str, float]:  # type: ignore[type-arg]
    """Doc id -> captrack's mc_letter verdict on generated_text, scored without lm-eval."""
    with zipfile.ZipFile(zip_path) as archive:
        items = json.loads(archive.read(archive.namelist()[0]))
    out = {}
    for item in items:
        key = f"mmlu_pro-{int(item['question_id'])}"
        if key in docs:
            out[key] = float(score("mc_letter", docs[key], item["generated_text"])["acc"])
    return out


def main() -> None:
    """Import each file; print times, agreement and the Llama-3.1-8B pair's counts."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default="/tmp/captrack-import")
    parser.add_argument("--only", action="append", help="model name(s) to import (default: every file)")
    args = parser.parse_args()
    data = shared_dir() / "data"
    work = Path(args.workdir)
    shutil.rmtree(work, ignore_errors=True)
    started = time.perf_counter()
    build_mirror(data, work / "mirror", ["mmlu_pro.full"])
    os.environ["CAPTRACK_DATA_DIR"] = str(work / "mirror")
    docs = {r["id"]: scoring_doc(r) for r in read_rows(work / "mirror", "mmlu_pro.full")}
    print(f"built mmlu_pro.full: {len(docs)} rows in {time.perf_counter() - started:.1f} s")
    verdicts: dict[str, dict[str, float]] = {}
    for zip_path in sorted((data / "mmlu_pro_outputs").glob("model_outputs_*.zip")):
        name = zip_path.stem.removeprefix("model_outputs_").removesuffix("_5shots")
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        result = import_run(zip_path, "mmlu-pro", work / "runs" / name, allow_partial=True, log=print)
        seconds = time.perf_counter() - t0
        samples = next(result.results_file.parent.glob("samples_*.jsonl"))
        got, direct = _verdicts(samples), _direct(zip_path, docs)
        verdicts[name] = got
        agree = sum(got[k] == direct[k] for k in got if k in direct)
        print(f"{name:32s} {len(got):6d} items imported in {seconds:5.1f} s; acc {sum(got.values()) / len(got):.4f}; "
              f"verdicts equal to the direct scorer: {agree} of {len(got)}")
    base, post = verdicts.get("Meta-Llama-3_1-8B"), verdicts.get("Meta-Llama-3_1-8B-Instruct")
    if base and post:
        common = sorted(set(base) & set(post))
        n = {(a, b): sum(base[k] == a and post[k] == b for k in common) for a in (1.0, 0.0) for b in (1.0, 0.0)}
        print(f"Llama-3.1-8B -> Instruct on {len(common)} items: acc {sum(base[k] for k in common) / len(common):.4f} -> "
              f"{sum(post[k] for k in common) / len(common):.4f}; n11 {n[1.0, 1.0]} n10 {n[1.0, 0.0]} "
              f"n01 {n[0.0, 1.0]} n00 {n[0.0, 0.0]}")


if __name__ == "__main__":
    main()
