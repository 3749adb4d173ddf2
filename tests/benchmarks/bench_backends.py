"""Benchmark: `hf` vs `captrack-ds` on the same model and requests, in one run: tokens/s and samples/s
for loglikelihood and generate_until, plus the largest per-request loglikelihood difference.

    DS_ACCELERATOR=cpu OMP_NUM_THREADS=1 .venv/bin/python tests/benchmarks/bench_backends.py
    .venv/bin/python tests/benchmarks/bench_backends.py --model /ckpt/Llama-3-8B --mode tp --limit 50
    deepspeed --num_gpus 8 tests/benchmarks/bench_backends.py --model /ckpt/Llama-3-70B --mode tp --skip-hf

Requests come from captrack's probe tasks (multiple choice for loglikelihood, free generation for
generate_until) without a chat template. "samples" are lm-eval requests. Under a multi-rank launch
every rank runs the same requests (lockstep) and rank 0 prints.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from collections import defaultdict
from typing import Any

DEFAULT_TASKS = "captrack_probe_c1_facts,captrack_probe_c2_word_problems"


def _requests(tasks: list[str], limit: int) -> dict[str, list[Any]]:
    from lm_eval.tasks import TaskManager, get_task_dict

    from captrack.paths import tasks_dir

    manager = TaskManager(include_path=[tasks_dir()], include_defaults=False)
    by_type: dict[str, list[Any]] = defaultdict(list)
    for task in get_task_dict(tasks, manager).values():
        task.build_all_requests(limit=limit, rank=0, world_size=1)
        for instance in task.instances:
            by_type[instance.request_type].append(instance)
    return by_type


def _measure(name: str, model_args: dict[str, Any], requests: dict[str, list[Any]], batch_size: int,
             device: str) -> dict[str, Any]:
    from lm_eval.api.registry import get_model

    lm = get_model(name).create_from_arg_obj(dict(model_args), {"batch_size": batch_size, "device": device})
    tokenizer = lm.tokenizer
    row: dict[str, Any] = {"backend": name}
    if requests.get("loglikelihood"):
        reqs = requests["loglikelihood"]
        start = time.perf_counter()
        row["ll"] = [value for value, _ in lm.loglikelihood(reqs)]
        seconds = time.perf_counter() - start
        tokens = sum(len(tokenizer(ctx + cont)["input_ids"]) for ctx, cont in (r.args for r in reqs))
        row["loglikelihood"] = (len(reqs), tokens, seconds)
    if requests.get("generate_until"):
        reqs = requests["generate_until"]
        start = time.perf_counter()
        outputs = lm.generate_until(reqs)
        seconds = time.perf_counter() - start
        tokens = sum(len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in outputs)
        row["generate_until"] = (len(reqs), tokens, seconds)
        row["generations"] = outputs
    del lm
    gc.collect()
    return row


def _default_model() -> str:
    from captrack.models import resolve_model

    return str(resolve_model("smollm2-135m-instruct"))


def main() -> None:
    """Parse arguments, run both backends on the same requests and print the throughput table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="HF folder or captrack alias (default: smollm2-135m-instruct)")
    parser.add_argument("--mode", default="tp", choices=["auto", "tp", "autotp", "zero3"], help="captrack-ds mode")
    parser.add_argument("--offload", default="none", choices=["none", "cpu", "nvme"], help="zero3 offload")
    parser.add_argument("--dtype", default=None, help="default: float32 on CPU, bfloat16 on GPU")
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help="comma-separated captrack tasks")
    parser.add_argument("--limit", type=int, default=8, help="docs per task (default 8)")
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--skip-hf", action="store_true", help="only captrack-ds (when hf cannot hold the model)")
    parser.add_argument("--local_rank", type=int, help=argparse.SUPPRESS)  # the deepspeed launcher's flag
    args = parser.parse_args()

    import torch

    from captrack.backends import register_backends

    register_backends()
    on_gpu = torch.cuda.is_available() and os.environ.get("DS_ACCELERATOR", "cuda") != "cpu"
    device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}" if on_gpu else "cpu"
    dtype = args.dtype or ("bfloat16" if on_gpu else "float32")
    model = args.model or _default_model()
    requests = _requests(args.tasks.split(","), args.limit)
    runs = [] if args.skip_hf else [("hf", {"pretrained": model, "dtype": dtype})]
    runs.append(("captrack-ds", {"pretrained": model, "mode": args.mode, "offload": args.offload, "dtype": dtype}))
    rows = [_measure(name, model_args, requests, args.batch_size, device) for name, model_args in runs]
    if int(os.environ.get("RANK", "0")) != 0:
        return
    world = os.environ.get("WORLD_SIZE", "1")
    print(f"model={model} mode={args.mode} offload={args.offload} dtype={dtype} device={device} world={world} "
          f"batch_size={args.batch_size} limit={args.limit} threads={os.environ.get('OMP_NUM_THREADS', 'default')}")
    print(f"{'backend':12s} {'request type':15s} {'samples':>7s} {'tokens':>7s} {'seconds':>8s} {'samples/s':>10s} {'tokens/s':>9s}")
    for row in rows:
        for kind in ("loglikelihood", "generate_until"):
            if kind in row:
                n, tokens, seconds = row[kind]
                print(f"{row['backend']:12s} {kind:15s} {n:7d} {tokens:7d} {seconds:8.2f} {n / seconds:10.2f} "
                      f"{tokens / seconds:9.1f}")
    if len(rows) == 2 and "ll" in rows[0]:
        pairs = list(zip(rows[0]["ll"], rows[1]["ll"], strict=True))
        diff = max(abs(a - b) for a, b in pairs)
        equal = sum(a == b for a, b in pairs)
        same = rows[0].get("generations") == rows[1].get("generations")
        print(f"max |loglikelihood diff| hf vs captrack-ds: {diff:.3g}; identical loglikelihoods: {equal}/{len(pairs)} "
              f"({100 * equal / len(pairs):.1f}%); greedy generations identical: {same}")


if __name__ == "__main__":
    main()
