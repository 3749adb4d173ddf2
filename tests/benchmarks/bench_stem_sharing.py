"""Benchmark: `captrack-hf` with and without stem sharing on the demo's loglikelihood requests.

    .venv/bin/python tests/benchmarks/bench_stem_sharing.py [--n 400] [--dtype float32|bfloat16] [--threads 1]

The demo's six forced-choice tasks (its `items:` per task, capped at --n; seed 1234, chat template) on
SmolLM2-135M-Instruct, encoded as lm-eval encodes them, scored twice by one loaded model: with stems (each
pass's shared beginning run once) and without (each context from its first token). Prints the wall time of
each, their ratio, the largest loglikelihood difference, how many is-greedy flags agree, and how many tokens
each ran through the decoder. Asserts nothing. Emulate a CPU without AVX-512 with
`ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

ITEMS = {"captrack_probe_c1_facts": 53, "captrack_probe_c2_logic": 400, "captrack_probe_w1_choice": 400,
         "captrack_probe_w2_false_premise_choice": 100, "captrack_probe_h4_multiturn_choice": 100,
         "captrack_probe_h6_citations_choice": 400}


def _requests(lm: Any, n: int) -> list[tuple[Any, list[int], list[int]]]:
    from lm_eval.tasks import get_task_dict

    from captrack.lmeval import task_manager

    manager = task_manager(metadata={"n": 400}, include_defaults=False)
    encoded = []
    for name, task in get_task_dict(list(ITEMS), manager).items():
        task.build_all_requests(limit=min(n, ITEMS[name]), apply_chat_template=True,
                                chat_template=lm.apply_chat_template, tokenizer_name=lm.tokenizer_name)
        for instance in task.instances:
            context, continuation = instance.args
            encoded.append(((context, continuation), *lm._encode_pair(context, continuation)))
    return encoded


def _score(lm: Any, requests: list[Any], stems: bool) -> tuple[list[Any], float, int]:
    seen: list[int] = []
    hook = lm.model.get_input_embeddings().register_forward_hook(lambda _m, args, _o: seen.append(args[0].numel()))
    lm.share_stems = stems
    started = time.perf_counter()
    try:
        scores = lm._loglikelihood_tokens(requests, disable_tqdm=True)
    finally:
        hook.remove()
    return scores, time.perf_counter() - started, sum(seen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=400)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()
    import torch

    from captrack.backends.shared_prefix import SharedPrefixLM
    from captrack.models import resolve_model

    if args.threads:
        torch.set_num_threads(args.threads)
    lm = SharedPrefixLM(pretrained=str(resolve_model("smollm2-135m-instruct")), dtype=args.dtype, device="cpu",
                        batch_size=64)
    requests = _requests(lm, args.n)
    print(f"{len(requests)} requests, {args.dtype}, {torch.get_num_threads()} thread(s), "
          f"kernels {torch.backends.cpu.get_cpu_capability()}", flush=True)
    shared, with_stems, tokens_with = _score(lm, requests, True)
    print(f"with stems:    {with_stems:7.1f} s, {tokens_with} tokens through the decoder", flush=True)
    alone, without, tokens_without = _score(lm, requests, False)
    print(f"without stems: {without:7.1f} s, {tokens_without} tokens through the decoder", flush=True)
    diffs = [abs(a[0] - b[0]) for a, b in zip(shared, alone, strict=True)]
    same = sum(a[1] == b[1] for a, b in zip(shared, alone, strict=True))
    print(f"ratio {without / with_stems:.2f}x; largest |d loglikelihood| {max(diffs):.2e} nats; "
          f"is-greedy equal {same}/{len(requests)}")


if __name__ == "__main__":
    main()
