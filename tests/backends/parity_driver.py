"""Run lm-eval on several (model, model_args) through its Python API; used by the parity tests.

    python parity_driver.py OUT_DIR RUNS.json        (or under torchrun / deepspeed for world > 1)

RUNS.json is a list of {"name", "model", "model_args"}. Each run writes OUT_DIR/<name>.json with
lm-eval's aggregated results and per-sample logs (only global rank 0 writes), and prints its time.
The runs share one process and one TaskManager (captrack's tasks only), so a launch pays for its
start-up once. CAPTRACK_PARITY_DEVICE=cuda runs the `hf` references on the GPU (default cpu);
CAPTRACK_PARITY_TASKS (comma-separated) and CAPTRACK_PARITY_LIMIT replace the tasks and the limit.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

TASKS = ["captrack_probe_c1_facts", "captrack_probe_c2_word_problems"]
LIMIT = 4
BATCH_SIZE = 2
GEN_KWARGS = "max_gen_toks=16"  # greedy continuations of 16 tokens (the task asks for up to 40)


def main(out: str, runs_file: str) -> None:
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from captrack.backends import register_backends
    from captrack.paths import tasks_dir

    register_backends()  # what captrack.lmeval.evaluate and captrack-eval do before lm-eval resolves a name
    manager = TaskManager(include_path=[tasks_dir()], include_defaults=False)
    Path(out).mkdir(parents=True, exist_ok=True)
    device = os.environ.get("CAPTRACK_PARITY_DEVICE", "cpu")
    for run in json.loads(Path(runs_file).read_text()):
        start = time.perf_counter()
        tasks = os.environ.get("CAPTRACK_PARITY_TASKS", ",".join(TASKS)).split(",")
        limit = int(os.environ.get("CAPTRACK_PARITY_LIMIT", LIMIT))
        results = simple_evaluate(model=run["model"], model_args=run["model_args"], tasks=tasks,
                                  batch_size=BATCH_SIZE, limit=limit, device=device, log_samples=True,
                                  apply_chat_template=True, task_manager=manager, gen_kwargs=GEN_KWARGS, random_seed=0,
                                  numpy_random_seed=0, torch_random_seed=0, fewshot_random_seed=0)
        if results is not None:
            kept = {"results": results["results"], "samples": results["samples"], "config": results["config"]}
            (Path(out) / f"{run['name']}.json").write_text(json.dumps(kept, default=str))
            print(f"PARITY-RUN {run['name']} {time.perf_counter() - start:.1f} s", flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:3])
