"""`captrack-hf` scores every loglikelihood request as lm-eval's `hf` does, running each context once.

A tiny random Llama in float32 (the real model in bfloat16 is tests/backends/test_shared_prefix_smollm2.py):
the requests mix what the sharing has to get right: contexts with several options of different lengths,
one-token options (which `hf` already shares), a one-token context (nothing to cache), duplicate
options, contexts of different lengths in one pass (padding, positions), and a request too long for
the model (left to HFLM, which truncates it). Every batch size gives `hf`'s numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tinymodel import build_tiny_model

from captrack.backends.shared_prefix import SharedPrefixLM, group_by_context

TEXTS = ["What is the capital of France? Answer: Paris, not Lyon or Marseille."] * 10
TOLERANCE = 1e-4  # nats, float32


@pytest.fixture(scope="module")
def lm(tmp_path_factory: pytest.TempPathFactory) -> SharedPrefixLM:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m", TEXTS, seed=3)
    return SharedPrefixLM(pretrained=str(folder), dtype="float32", device="cpu", batch_size=4, max_length=64)


def _requests(lm: SharedPrefixLM) -> list[tuple[Any, list[int], list[int]]]:
    """Encoded requests the way lm-eval encodes them (context, continuation), plus one by hand."""
    pairs = [
        ("Question: what is the capital of France?\nAnswer:", " Paris"),
        ("Question: what is the capital of France?\nAnswer:", " Lyon, a city on the Rhone"),
        ("Question: what is the capital of France?\nAnswer:", " Marseille"),
        ("Question: what is the capital of France?\nAnswer:", " Paris"),  # the same option twice
        ("Is Paris in France? Answer:", " yes"),
        ("Is Paris in France? Answer:", " no"),
        ("A", " capital of France"),
        ("Answer: Paris, not Lyon or Marseille. Answer: Paris, not Lyon", " or Marseille."),
    ]
    encoded: list[tuple[Any, list[int], list[int]]] = []
    for context, continuation in pairs:
        context_enc, continuation_enc = lm._encode_pair(context, continuation)
        encoded.append(((context, continuation), context_enc, continuation_enc))
    encoded.append((None, [lm.prefix_token_id], lm.tok_encode(" Paris is the capital")))  # no context at all
    encoded.append((("long", " tail"), lm.tok_encode(" Paris" * 70), lm.tok_encode(" tail")))  # > max_length
    return encoded


def test_the_requests_cover_every_case(lm: SharedPrefixLM) -> None:
    requests = _requests(lm)
    groups, too_long = group_by_context(requests, lm.max_length)
    assert too_long == [len(requests) - 1]
    sizes = sorted(len(g.members) for g in groups)
    assert sizes == [1, 1, 1, 2, 4]  # a 4-option context (one option twice), a 2-option one, three alone
    assert any(len(g.context) == 1 for g in groups)  # nothing before the first token to cache
    assert any(len(requests[i][2]) == 1 for g in groups for i in g.members)  # one-token options
    assert len({len(g.context) for g in groups}) >= 3  # contexts of different lengths share a pass


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_every_request_scores_as_hf_scores_it(lm: SharedPrefixLM, batch_size: int) -> None:
    from lm_eval.models.huggingface import HFLM

    requests = _requests(lm)
    expected = HFLM._loglikelihood_tokens(lm, requests, disable_tqdm=True, override_bs=batch_size)
    got = lm._loglikelihood_tokens(requests, disable_tqdm=True, override_bs=batch_size)
    diffs = [abs(a[0] - b[0]) for a, b in zip(expected, got, strict=True)]
    assert max(diffs) < TOLERANCE, diffs
    assert [g for _, g in got] == [g for _, g in expected]
    assert got[0][0] == got[3][0]  # the duplicate option is the same row


def test_a_shared_stem_runs_once_and_scores_as_hf(lm: SharedPrefixLM) -> None:
    """Twelve contexts after one long instruction (as a task's prompts are): hf's numbers, far fewer tokens run."""
    from lm_eval.models.huggingface import HFLM

    stem = "Answer: Paris, not Lyon or Marseille. " * 3
    requests = []
    for item in range(12):
        context = stem + "Question: what is the capital of France?" + " Paris" * (item % 4) + " Lyon" * (item // 4)
        context += "\nAnswer:"
        for option in (" Paris", " Lyon or Marseille"):
            context_enc, option_enc = lm._encode_pair(context, option)
            requests.append(((context, option), context_enc, option_enc))
    seen: list[int] = []
    hook = lm.model.get_input_embeddings().register_forward_hook(lambda _m, args, _o: seen.append(args[0].numel()))
    try:
        got = lm._loglikelihood_tokens(requests, disable_tqdm=True, override_bs=8)
    finally:
        hook.remove()
    expected = HFLM._loglikelihood_tokens(lm, requests, disable_tqdm=True, override_bs=8)
    assert max(abs(a[0] - b[0]) for a, b in zip(expected, got, strict=True)) < TOLERANCE
    assert [g for _, g in got] == [g for _, g in expected]
    shared = len(lm.tok_encode(stem)) - 1
    every_context = sum(len(r[1]) for r in requests[::2])  # twelve distinct contexts, each once
    assert shared > 20
    assert sum(seen) < every_context - 8 * shared  # the stem ran about once per pass, not once per context


def test_greedy_continuations_are_recognised(lm: SharedPrefixLM) -> None:
    """is_greedy is true for the model's own greedy continuation (not only false everywhere)."""
    import torch

    context = lm.tok_encode("Question: what is the capital of France?\nAnswer:")
    tokens = list(context)
    with torch.no_grad():
        for _ in range(3):
            tokens.append(int(lm.model(torch.tensor([tokens])).logits[0, -1].argmax()))
    request = (None, context, tokens[len(context):])
    ((_, greedy),) = lm._loglikelihood_tokens([request], disable_tqdm=True)
    ((_, other),) = lm._loglikelihood_tokens([(None, context, [*tokens[len(context):-1], tokens[-1] + 1])],
                                             disable_tqdm=True)
    assert greedy and not other


def test_an_empty_context_is_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="request 0 has an empty context"):
        group_by_context([(None, [], [1])], 16)


def test_the_backend_is_registered_for_lm_eval(tmp_path: Path) -> None:
    from lm_eval.api.registry import get_model

    from captrack.backends import register_backends

    assert "captrack-hf" in register_backends()
    assert get_model("captrack-hf") is SharedPrefixLM
