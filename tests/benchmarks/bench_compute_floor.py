"""Benchmark: the least arithmetic the demo's loglikelihood requests need, and the least time it takes on this CPU.

    .venv/bin/python tests/benchmarks/bench_compute_floor.py [--threads 1] [--dtype float32]

Encodes the demo's forced-choice requests as lm-eval does (tests/benchmarks/bench_stem_sharing.py, SmolLM2-135M-Instruct,
chat template) and counts the tokens any exact evaluation must run through the decoder: each distinct context token
once (a prefix tree over all contexts: no backend can share more) and each continuation token once, with the logits
over the vocabulary only where a continuation token is scored. Multiplies by the model's multiply-adds per token (from
its config: projections, MLP, attention over the context) and divides by the matrix-product speed measured here in the
same dtype and thread count. Prints the counts, the arithmetic, the speed and the floor in seconds for one evaluation
and for the demo's four (two side by side, a thread each). The demo's generation task, its trainings and start-ups
come on top. Asserts nothing. Emulate a CPU without AVX-512 with `ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any


def _prefix_tree_tokens(sequences: list[tuple[int, ...]]) -> int:
    """Tokens in a prefix tree of `sequences` (each shared beginning counted once)."""
    ordered = sorted(set(sequences))
    total, previous = 0, ()
    for seq in ordered:
        shared = 0
        for a, b in zip(seq, previous, strict=False):
            if a != b:
                break
            shared += 1
        total += len(seq) - shared
        previous = seq
    return total


def _macs_per_token(config: Any, context: float) -> tuple[float, float]:
    """(decoder multiply-adds per token at mean attention span `context`, the output layer's per scored position)."""
    hidden, layers = config.hidden_size, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or hidden // config.num_attention_heads
    kv = config.num_key_value_heads * head_dim
    projections = hidden * hidden * 2 + hidden * kv * 2  # q, o; k, v
    mlp = 3 * hidden * config.intermediate_size  # gate, up, down
    attention = 2 * config.num_attention_heads * head_dim * context  # scores and weighted values
    return layers * (projections + mlp + attention), hidden * config.vocab_size


def _gflops(dtype: Any, hidden: int, inner: int) -> float:
    """Matrix-product speed here (GFLOP/s) on decoder-shaped products (rows x hidden by hidden x inner): the best of
    five timings of 40 products each (the floor is a least time: the CPU's best, not its average under noise)."""
    import torch

    a, b = torch.randn(512, hidden, dtype=dtype), torch.randn(hidden, inner, dtype=dtype)
    for _ in range(10):
        a @ b
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(40):
            a @ b
        best = min(best, time.perf_counter() - started)
    return 2 * 512 * hidden * inner * 40 / best / 1e9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the demo runs two evaluations, a thread each)")
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    import torch
    from bench_stem_sharing import _requests
    from lm_eval.models.huggingface import HFLM

    from captrack.models import resolve_model

    torch.set_num_threads(args.threads)
    lm = HFLM(pretrained=str(resolve_model("smollm2-135m-instruct")), dtype=args.dtype, device="cpu", batch_size=1)
    requests = _requests(lm, 400)
    contexts = [tuple(context) for _, context, _ in requests]
    pairs = {(tuple(context), tuple(continuation)) for _, context, continuation in requests}
    all_context = sum(len(c) for c in contexts)
    distinct = _prefix_tree_tokens(contexts)
    scored = sum(len(continuation) for _, continuation in pairs)
    mean_context = sum(len(c) for c in set(contexts)) / len(set(contexts))
    decoder, output = _macs_per_token(lm.model.config, mean_context / 2)
    macs = (distinct + scored) * decoder + scored * output
    speed = _gflops(getattr(torch, args.dtype), lm.model.config.hidden_size, lm.model.config.intermediate_size)
    one = 2 * macs / speed / 1e9
    print(f"{len(requests)} loglikelihood requests; kernels {torch.backends.cpu.get_cpu_capability()}, {args.dtype}, "
          f"{torch.get_num_threads()} thread(s)")
    print(f"context tokens {all_context}, distinct in a prefix tree {distinct}; continuation tokens scored {scored}")
    print(f"per token: decoder {decoder / 1e6:.1f} M multiply-adds, output layer {output / 1e6:.1f} M per scored token; "
          f"in all {2 * macs / 1e12:.2f} TFLOP per evaluation")
    print(f"matrix products here: {speed:.1f} GFLOP/s")
    print(f"floor: {one:.0f} s per evaluation's loglikelihoods; the demo's four, two side by side: {2 * one:.0f} s "
          "(before its generation task, trainings and start-ups)")


if __name__ == "__main__":
    main()
