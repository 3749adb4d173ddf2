"""Benchmark: lm-eval's `hf` and `vllm` models on the same checkpoint, as a base/variant pair, in one run.

    .venv/bin/python tests/benchmarks/bench_vllm_agreement.py [--limit 40] [--tasks a,b] [--work DIR] [--dtype float32]

SmolLM2-135M-Instruct (captrack's dequantised demo model) is evaluated on the demo's probe tasks (its
leaderboards/demo/experiment.yaml: chat template, metadata n=400, the first --limit items of each) twice: by `hf` in
captrack's environment and by `vllm` in the vLLM environment (captrack/lmeval/vllm_env.py; built first when absent),
both through captrack.lmeval.evaluate_checkpoint with batch size 8 and one CPU thread each (vLLM binds one core
on a 2-core machine). Each backend's loglikelihood and generation calls are timed (wall clock, the engine start
left out) and their tokens counted (loglikelihood: context and continuation; generation: the tokens generated).

It prints: the share of multiple-choice decisions identical (the argmax option per doc and context), the median
and max |Δ loglikelihood| per request, the share of greedy generations identical, tokens/s of each backend and
their ratio; then `captrack ingest` (hf as `hf`, vllm as `vllm`) and `captrack compare --base hf --variant vllm
--margin 5`, and each task's verdict. On a GPU, `--dtype bfloat16` runs both in bf16. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEMO_TASKS = ("captrack_probe_c1_facts", "captrack_probe_c2_logic", "captrack_probe_c2_word_problems",
              "captrack_probe_w1_choice", "captrack_probe_w2_false_premise_choice", "captrack_probe_h4_multiturn_choice",
              "captrack_probe_h6_citations_choice")
BATCH = 8


def _timed(cls: Any, method: str, clock: dict[str, float]) -> None:
    """Wrap `cls.method` (loglikelihood or generate_until) to add its wall seconds and tokens to `clock`."""
    original = getattr(cls, method)

    def wrapped(self: Any, requests: list[Any], *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        out = original(self, requests, *args, **kwargs)
        clock[f"{method}_s"] += time.perf_counter() - started
        if method == "loglikelihood":
            clock[f"{method}_tokens"] += sum(len(self.tok_encode(r.args[0] + r.args[1])) for r in requests)
        else:
            clock[f"{method}_tokens"] += sum(len(self.tok_encode(text)) for text in out)
        clock[f"{method}_requests"] += len(requests)
        return out

    setattr(cls, method, wrapped)


def worker(backend: str, model: str, tasks: list[str], limit: int, out: Path, dtype: str) -> None:
    """One backend's evaluation (run under that backend's interpreter); writes out/timing.json beside lm-eval's files."""
    import torch

    from captrack.backends import register_backends
    from captrack.lmeval.evaluate import EvalSpec, evaluate_checkpoint
    from captrack.lmeval.vllm_shim import prepare_vllm

    torch.set_num_threads(1)
    if backend == "vllm":
        prepare_vllm()
    register_backends()
    from lm_eval.api.registry import get_model

    clock = {f"{m}_{k}": 0.0 for m in ("loglikelihood", "generate_until") for k in ("s", "tokens", "requests")}
    cls = get_model(backend)
    for method in ("loglikelihood", "generate_until"):
        _timed(cls, method, clock)
    args: dict[str, Any] = {"pretrained": model, "dtype": dtype} | ({"max_model_len": 2048} if backend == "vllm" else {})
    spec = EvalSpec(model_args=args, tasks=tasks, model=backend, batch_size=BATCH, limit=limit, metadata={"n": 400})
    started = time.perf_counter()
    evaluate_checkpoint(spec, out)
    clock["wall_s"] = time.perf_counter() - started
    (out / "timing.json").write_text(json.dumps(clock, indent=1), encoding="utf-8")


def _samples(run: Path) -> dict[str, dict[int, dict[str, Any]]]:
    """Task -> doc_id -> sample, from one run's samples_*.jsonl."""
    found: dict[str, dict[int, dict[str, Any]]] = {}
    for path in run.glob("*/samples_*.jsonl"):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        found[task] = {row["doc_id"]: row for row in rows}
    return found


def _decisions(sample: dict[str, Any]) -> list[int]:
    """The argmax option per context of a loglikelihood sample (a forced-choice twin asks several contexts)."""
    by_context: dict[str, list[tuple[int, float]]] = {}
    for i, (args, resp) in enumerate(zip(sample["arguments"].values(), sample["resps"], strict=True)):
        by_context.setdefault(args["arg_0"], []).append((i, float(resp[0][0])))
    return [max(options, key=lambda o: o[1])[0] for options in by_context.values()]


def agreement(hf: Path, vllm: Path) -> dict[str, Any]:
    """Decisions and generations identical, |Δ loglikelihood| per request, over the docs both runs have."""
    a, b = _samples(hf), _samples(vllm)
    same = decisions = gen_same = gens = 0
    deltas: list[float] = []
    for task in sorted(set(a) & set(b)):
        for doc in sorted(set(a[task]) & set(b[task])):
            x, y = a[task][doc], b[task][doc]
            if isinstance(x["resps"][0][0], list):  # loglikelihood: [[logprob, is_greedy]] per request
                deltas += [abs(float(p[0][0]) - float(q[0][0])) for p, q in zip(x["resps"], y["resps"], strict=True)]
                pairs = list(zip(_decisions(x), _decisions(y), strict=True))
                same += sum(p == q for p, q in pairs)
                decisions += len(pairs)
            else:
                gen_same += x["resps"][0][0] == y["resps"][0][0]
                gens += 1
    return {"decisions": decisions, "decisions_same": same, "requests": len(deltas),
            "median_dll": statistics.median(deltas) if deltas else float("nan"), "max_dll": max(deltas, default=float("nan")),
            "generations": gens, "generations_same": gen_same}


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        sys.exit(f"{argv[:4]} failed:\n{(done.stdout + done.stderr)[-3000:]}")
    return done.stdout


def _compare(work: Path) -> list[tuple[str, str, str]]:
    """Ingest both runs and compare vllm (variant) with hf (base) at margin 5: (task, metric, verdict) rows."""
    import csv

    captrack = str(Path(sys.executable).parent / "captrack")
    store = work / "store.duckdb"
    store.unlink(missing_ok=True)
    for name in ("hf", "vllm"):
        _run([captrack, "ingest", str(work / name), "--store", str(store), "--name", name])
    _run([captrack, "compare", "--store", str(store), "--base", "hf", "--variant", "vllm", "--margin", "5",
          "--out", str(work / "compare")])
    with open(work / "compare" / "drift.csv", encoding="utf-8") as handle:
        return [(row["task"], row["metric"], row["verdict"]) for row in csv.DictReader(handle)]


def _cpu_flags() -> str:
    try:
        flags = next(line for line in Path("/proc/cpuinfo").read_text().splitlines() if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    wanted = [f for f in flags if f.startswith(("avx512", "amx")) or f in ("avx2", "fma")]
    return " ".join(sorted(wanted)) or "none of avx2/avx512/amx"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=40, help="items per task (the first N)")
    parser.add_argument("--tasks", default=",".join(DEMO_TASKS))
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bench-vllm-agreement")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--worker", choices=("hf", "vllm"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    args = parser.parse_args()
    tasks = [t for t in args.tasks.split(",") if t]
    if args.worker:
        worker(args.worker, args.model, tasks, args.limit, args.work, args.dtype)
        return

    from captrack.lmeval.vllm_env import build_vllm_env
    from captrack.models import resolve_model

    model = str(resolve_model("smollm2-135m-instruct"))
    pythons = {"hf": sys.executable, "vllm": str(build_vllm_env(say=True))}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": "1"}
    timing = {}
    for backend, python in pythons.items():
        out = args.work / backend
        started = time.perf_counter()
        _run([python, __file__, "--worker", backend, "--model", model, "--tasks", ",".join(tasks), "--limit",
              str(args.limit), "--work", str(out), "--dtype", args.dtype], env)
        timing[backend] = json.loads((out / "timing.json").read_text(encoding="utf-8"))
        print(f"{backend}: {time.perf_counter() - started:.0f} s in all (process start, model load, evaluation)", flush=True)
    _report(agreement(args.work / "hf", args.work / "vllm"), timing, tasks, args)
    print("\ncaptrack compare --base hf --variant vllm --margin 5:")
    for task, metric, verdict in _compare(args.work):
        print(f"  {task:42s} {metric:16s} {verdict}")


def _report(found: dict[str, Any], timing: dict[str, dict[str, float]], tasks: list[str], args: Any) -> None:
    print(f"\nSmolLM2-135M-Instruct {args.dtype}, {len(tasks)} tasks x first {args.limit} items, batch {BATCH}, "
          f"1 thread each; CPU flags: {_cpu_flags()}; load average {os.getloadavg()[0]:.1f}")
    print(f"multiple-choice decisions identical: {found['decisions_same']}/{found['decisions']} "
          f"({100 * found['decisions_same'] / max(1, found['decisions']):.1f}%)")
    print(f"|Δ loglikelihood| over {found['requests']} requests: median {found['median_dll']:.2e}, max {found['max_dll']:.2e} nats")
    print(f"greedy generations identical: {found['generations_same']}/{found['generations']} "
          f"({100 * found['generations_same'] / max(1, found['generations']):.1f}%)")
    for kind in ("loglikelihood", "generate_until"):
        rates = {b: t[f"{kind}_tokens"] / t[f"{kind}_s"] if t[f"{kind}_s"] else float("nan") for b, t in timing.items()}
        line = ", ".join(f"{b} {rates[b]:.0f} tok/s ({int(timing[b][f'{kind}_tokens'])} tokens, "
                         f"{timing[b][f'{kind}_s']:.1f} s)" for b in rates)
        print(f"{kind}: {line}; vllm/hf {rates['vllm'] / rates['hf']:.2f}x")


if __name__ == "__main__":  # vLLM's engine process is spawned: the worker must not run on import
    main()
