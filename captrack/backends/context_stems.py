"""Stems: the leading tokens many loglikelihood contexts share, so that `captrack-hf` runs them once.

A task's prompts begin alike: the chat template's system turn, then the task's own instructions (the demo's
citation task repeats 131 tokens before each item's passage). Counted on the demo's seven probe tasks with
SmolLM2's tokenizer, 74,500 of their 172,000 context tokens are distinct once shared beginnings are counted
once. Where the CPU computes every token (float32 on a CPU without bfloat16 instructions), those shared
tokens are most of the evaluation's time.

Two steps, both here:

- :func:`order_by_family` orders the contexts so that a pass's contexts share a long beginning: each context
  belongs to the longest beginning it shares with at least ``family`` contexts (its family); families are
  kept together, longest context first within one (so a pass still pads little).
- :func:`common_stem` is the beginning all of a pass's contexts share; the model runs it once (batch 1) and
  every context of the pass continues from a copy of its keys and values.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["common_stem", "order_by_family"]


def _common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share."""
    limit = min(len(a), len(b))
    for index in range(limit):
        if a[index] != b[index]:
            return index
    return limit


def common_stem(prefixes: Sequence[Sequence[int]]) -> int:
    """The number of leading tokens every one of `prefixes` shares (0 for none or an empty list)."""
    if not prefixes:
        return 0
    first = prefixes[0]
    length = len(first)
    for other in prefixes[1:]:
        length = _common_length(first[:length], other)
        if length == 0:
            break
    return length


def _family_lengths(ordered: Sequence[Sequence[int]], family: int) -> list[int]:
    """For each context (in token order), the longest beginning it shares with at least `family` contexts.

    In token order the contexts sharing a beginning are consecutive, and a run's shared beginning is the
    shortest of its neighbours' shared lengths: the answer for a context is the best window of `family`
    consecutive contexts that holds it.
    """
    count = len(ordered)
    if count < family:
        shared = common_stem(ordered)
        return [shared] * count
    neighbours = [_common_length(ordered[i], ordered[i + 1]) for i in range(count - 1)]
    best = [0] * count
    for start in range(count - family + 1):
        window = min(neighbours[start:start + family - 1]) if family > 1 else len(ordered[start])
        for index in range(start, start + family):
            best[index] = max(best[index], window)
    return best


def order_by_family(contexts: Sequence[Sequence[int]], family: int) -> list[int]:
    """The indexes of `contexts`, families together, each family's longest context first.

    Args:
        contexts: token sequences.
        family: how many contexts a shared beginning needs to make them a family (the contexts of about
            one pass: fewer, and passes straddle families, whose shared beginning is then short).

    Returns:
        A permutation of ``range(len(contexts))``; deterministic for the same contexts.
    """
    by_tokens = sorted(range(len(contexts)), key=lambda i: tuple(contexts[i]))
    lengths = _family_lengths([contexts[i] for i in by_tokens], max(1, family))
    stem_of = {index: tuple(contexts[index][:length]) for index, length in zip(by_tokens, lengths, strict=True)}
    return sorted(range(len(contexts)), key=lambda i: (stem_of[i], -len(contexts[i]), tuple(contexts[i])))
