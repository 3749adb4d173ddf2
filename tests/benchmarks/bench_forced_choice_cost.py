"""Benchmark: CPU-seconds per item of each forced-choice twin (`hf` and `captrack-hf`) and of its generative twin.

    OMP_NUM_THREADS=1 .venv/bin/python tests/benchmarks/bench_forced_choice_cost.py [--n 40] [--tasks a,b]

One model (SmolLM2-135M-Instruct, bfloat16, 1 torch thread) and the tasks' own requests under its chat
template (the first --n docs of seed 1234, as the demo runs them). The clock is the process's CPU time
around the model calls only (lm-eval's task building left out), so a busy machine changes it little.
Forced-choice tasks run on both backends over the same requests, and the largest per-request
loglikelihood difference and the per-doc choice agreement between them are printed; generative tasks
run once (generation is HFLM's own in both). Prints a Markdown table; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from captrack.probes.twins import forced_choice_twins

# forced-choice twin -> its generative twin(s), as each task declares them (W1's choice item is one harmful and one
# benign request)
TWINS = {task: list(twins) for task, twins in forced_choice_twins().items()}


def _instances(task_names: list[str], lm: Any, n: int) -> dict[str, list[Any]]:
    """Each task's request instances for its first `n` docs, rendered with the model's chat template."""
    from lm_eval.tasks import get_task_dict

    from captrack.lmeval import task_manager

    manager = task_manager(metadata={"n": n, "lengths": [250]}, include_defaults=False)
    out = {}
    for name, task in get_task_dict(task_names, manager).items():
        task.build_all_requests(limit=n, apply_chat_template=True, chat_template=lm.apply_chat_template,
                                tokenizer_name=lm.tokenizer_name)
        out[name] = list(task.instances)
    return out


def _timed(lm: Any, instances: list[Any]) -> tuple[float, float, list[Any]]:
    """(CPU seconds, wall seconds, responses) of one model call over `instances`."""
    kind = instances[0].request_type
    cpu, wall = time.process_time(), time.perf_counter()
    responses = getattr(lm, kind)(instances, disable_tqdm=True)
    return time.process_time() - cpu, time.perf_counter() - wall, responses


def _choice_agreement(instances: list[Any], first: list[Any], second: list[Any]) -> tuple[int, int]:
    """(Doc, context) pairs whose argmax option is the same under both backends, and their number."""
    by_doc: dict[tuple[int, str], list[tuple[float, float]]] = {}
    for instance, a, b in zip(instances, first, second, strict=True):
        by_doc.setdefault((instance.doc_id, instance.arguments[0]), []).append((a[0], b[0]))
    same = 0
    for pairs in by_doc.values():
        same += max(range(len(pairs)), key=lambda i: pairs[i][0]) == max(range(len(pairs)), key=lambda i: pairs[i][1])
    return same, len(by_doc)


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--tasks", default=",".join(TWINS), help="forced-choice tasks (their twins come along)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--no-generative", action="store_true", help="skip the generative twins")
    args = parser.parse_args()

    import torch
    from lm_eval.models.huggingface import HFLM

    from captrack.backends.shared_prefix import SharedPrefixLM
    from captrack.models import resolve_model

    torch.set_num_threads(1)
    shared = SharedPrefixLM(pretrained=str(resolve_model("smollm2-135m-instruct")), dtype="bfloat16", device="cpu",
                            batch_size=args.batch_size)
    stock = HFLM(pretrained=shared.model, tokenizer=shared.tokenizer, batch_size=args.batch_size)
    chosen = args.tasks.split(",")
    generative = [] if args.no_generative else [t for c in chosen for t in TWINS.get(c, [])]
    instances = _instances(chosen + generative, shared, args.n)
    for lm in (stock, shared):  # warm-up: first-call allocations are not the tasks' cost
        lm.loglikelihood(instances[chosen[0]][:4], disable_tqdm=True)
    print("| task | backend | docs | requests | CPU-s | CPU-s per item | wall s | note |")
    print("|---|---|---|---|---|---|---|---|")
    for task in chosen + generative:
        items = instances[task]
        docs = len({i.doc_id for i in items})
        if items[0].request_type == "loglikelihood":
            runs = {name: _timed(lm, items) for name, lm in (("hf", stock), ("captrack-hf", shared))}
            diff = max(abs(a[0] - b[0]) for a, b in zip(runs["hf"][2], runs["captrack-hf"][2], strict=True))
            greedy = sum(a[1] == b[1] for a, b in zip(runs["hf"][2], runs["captrack-hf"][2], strict=True))
            same, total = _choice_agreement(items, runs["hf"][2], runs["captrack-hf"][2])
            note = f"max abs diff {diff:.4f} nats; is_greedy same {greedy}/{len(items)}; argmax same {same}/{total} contexts"
        else:
            runs = {"hf": _timed(stock, items)}
            note = "generation (the same in both backends)"
        for name, (cpu, wall, _) in runs.items():
            print(f"| {task} | {name} | {docs} | {len(items)} | {cpu:.1f} | {cpu / docs:.3f} | {wall:.1f} | {note} |",
                  flush=True)


if __name__ == "__main__":
    main()
