"""Evaluate several (model, model_args) through captrack.lmeval.evaluate.evaluate_checkpoint, as `captrack run`'s
evaluation stage does (so a model_args ``adapter`` goes through captrack.backends.adapters); used by
tests/backends/test_adapter_backends.py, under captrack's interpreter and under the vLLM environment's.

    python adapter_driver.py OUT_DIR RUNS.json

RUNS.json: a list of {"name", "model", "model_args"} (and "serve": true for a vllm run through a server it starts, as a
``serve: vllm`` stage does); each run's lm-eval files land under OUT_DIR/<name>/. The task,
its size and the batch size are the module's constants: one multiple-choice probe, no chat template.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

TASK = "captrack_probe_c2_logic"
ITEMS = 120  # the probe's generator makes this many (metadata n); 1 flip in 120 is still ≥ 99% agreement
BATCH_SIZE = 8


def main(out: str, runs_file: str) -> None:
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint

    for run in json.loads(Path(runs_file).read_text()):
        start = time.perf_counter()
        spec = EvalSpec(model_args=run["model_args"], tasks=(TASK,), model=run["model"], batch_size=BATCH_SIZE,
                        apply_chat_template=False, metadata={"n": ITEMS}, device="cpu")
        if run.get("serve"):
            from captrack.lmeval.served import evaluate_served

            evaluate_served(spec, Path(out) / run["name"], None)
        else:
            evaluate_checkpoint(spec, Path(out) / run["name"])
        print(f"ADAPTER-RUN {run['name']} {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":  # vLLM's engine starts a process of its own: the driver must be importable without running
    main(*sys.argv[1:3])
