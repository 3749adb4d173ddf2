"""Benchmark: run the whole probe suite on one model, print its wall time and every task's scores.

    .venv/bin/python tests/benchmarks/bench_probe_suite.py --model smollm2-135m-instruct --chat
    .venv/bin/python tests/benchmarks/bench_probe_suite.py --model gemma-3-270m --limit 10

On a shared CPU machine set OMP_NUM_THREADS=1: two torch threads competing with other busy
processes can be ten times slower per decoding step than one.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    """Parse arguments, run lm-eval on ``captrack_probe_*`` and print the timings and scores."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m-instruct", help="alias, HF folder or .gguf file")
    parser.add_argument("--chat", action="store_true", help="apply the model's chat template")
    parser.add_argument("--limit", type=int, default=None, help="items per task (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="lm-eval output folder (default: a temp dir)")
    args = parser.parse_args()

    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint
    from captrack.models import resolve_model

    path = resolve_model(args.model)
    out = args.out or Path(tempfile.mkdtemp(prefix="captrack-probes-"))
    spec = EvalSpec(
        model_args={"pretrained": str(path), "dtype": "float32"}, tasks=["captrack_probe_*"],
        limit=args.limit, apply_chat_template=args.chat, device="cpu",
    )
    start = time.perf_counter()
    results = json.loads(evaluate_checkpoint(spec, out).read_text())
    wall = time.perf_counter() - start
    threads = os.environ.get("OMP_NUM_THREADS", "default")
    print(f"model={args.model} chat={args.chat} limit={args.limit} cpus={os.cpu_count()} threads={threads}")
    print(f"wall_seconds={wall:.0f} samples_in={out}")
    for task in sorted(results["results"]):
        scores = {k.split(",")[0]: v for k, v in results["results"][task].items()
                  if k.endswith(",none") and "stderr" not in k}
        print(f"{task:36s} n={results['n-samples'][task]['effective']:3d} "
              + " ".join(f"{k}={v:.3f}" for k, v in sorted(scores.items())))


if __name__ == "__main__":
    main()
