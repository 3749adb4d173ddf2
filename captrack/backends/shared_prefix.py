"""`captrack-hf`: lm-eval's HFLM that runs each context once for all of its continuations.

lm-eval's `hf` model scores a k-option forced choice with k forwards of context + option (only options
of one token share a forward), so on a CPU a forced choice costs k times its context. This model groups
loglikelihood requests by their context tokens, runs the context once with the KV cache on (no logits
over the vocabulary: only the keys and values are kept), and scores every continuation of that context
from the cached keys and values in one batched pass. The prefill of a k-option item costs one context.

    captrack-eval --model captrack-hf --model_args pretrained=smollm2-135m-instruct,dtype=bfloat16 ...

What is shared, and how the rows line up (context c of length L, continuation x of length m):

- stem: the leading tokens all of a pass's ``c[:-1]`` share (the chat template's system turn, a task's
  instructions), run once with batch 1 and copied to each context (captrack.backends.context_stems orders
  the contexts so that a pass's share a long one);
- prefill: the rest of ``c[:-1]`` for up to ``batch_size`` contexts, right-padded, on the stem's keys and
  values (a causal model needs no mask);
- continuation pass: one row per distinct ``c[-1] + x[:-1]`` (options with the same input share it, as
  one-token options do in `hf`), on the context's cached keys and values; a padding mask and explicit
  positions when the chunk's contexts differ in length. Its m logits score x, as `hf`'s last m do.

``batch_size`` bounds the continuation rows of one pass (and so the contexts of one prefill; a context
with more options than that gets a pass of its own); ``auto`` means 32 here. ``loglikelihood_rolling``'s
windows come through here too (each window a context of its own). HFLM keeps generation, encoder-decoder
models, and requests too long for the model (it truncates them from the left; they are passed to it).
The numbers equal `hf`'s within float tolerance (tests/backends/test_shared_prefix.py states it).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from lm_eval.models.huggingface import HFLM
from tqdm import tqdm

from captrack.backends.context_stems import common_stem, order_by_family

__all__ = ["ContextGroup", "SharedPrefixLM", "group_by_context"]

Request = tuple[Any, list[int], list[int]]  # (cache key or None, context tokens, continuation tokens)
Score = tuple[float, bool]  # (log-likelihood of the continuation, every token the greedy one)


@dataclass
class ContextGroup:
    """The requests (their indexes) that share one context."""

    context: tuple[int, ...]
    members: list[int] = field(default_factory=list)


def group_by_context(requests: Sequence[Request], max_length: int) -> tuple[list[ContextGroup], list[int]]:
    """Group requests by context tokens, longest context first; also the requests HFLM must truncate.

    Args:
        requests: lm-eval's encoded requests.
        max_length: the model's window; a request with more than ``max_length + 1`` tokens is left to
            HFLM, which truncates it from the left (its context is then not the shared one).

    Returns:
        The groups, sorted by context length (longest first, so a chunk pads little), and the indexes
        of the requests too long to share.
    """
    groups: dict[tuple[int, ...], ContextGroup] = {}
    too_long = []
    for index, (_, context, continuation) in enumerate(requests):
        if not context or not continuation:
            raise ValueError(f"loglikelihood request {index} has an empty context or continuation "
                             "(lm-eval encodes an empty context as the prefix token)")
        if len(context) + len(continuation) > max_length + 1:
            too_long.append(index)
            continue
        key = tuple(context)
        groups.setdefault(key, ContextGroup(key)).members.append(index)
    return sorted(groups.values(), key=lambda g: -len(g.context)), too_long


def _chunks(groups: list[ContextGroup], requests: Sequence[Request], rows_per_pass: int) -> list[list[ContextGroup]]:
    """Consecutive groups whose distinct continuation rows number at most `rows_per_pass` (at least one group)."""
    chunks: list[list[ContextGroup]] = []
    rows = 0
    for group in groups:
        count = len({tuple(requests[i][2][:-1]) for i in group.members})
        if chunks and rows + count <= rows_per_pass:
            chunks[-1].append(group)
            rows += count
        else:
            chunks.append([group])
            rows = count
    return chunks


class SharedPrefixLM(HFLM):
    """HFLM whose loglikelihood runs each distinct context once and scores its continuations from the KV cache."""

    share_stems = True
    """Run a pass's common stem once (False: every context from its first token, as before stems; for benchmarks)."""

    def _loglikelihood_tokens(self, requests: list[Request], disable_tqdm: bool = False,
                              override_bs: int | None = None) -> list[Score]:
        """Score `requests` like HFLM, sharing each context's forward between its continuations."""
        if self.backend != "causal":
            return list(super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs))
        groups, too_long = group_by_context(requests, self.max_length)
        results: dict[int, Score] = {}
        if too_long:
            truncated = super()._loglikelihood_tokens([requests[i] for i in too_long], disable_tqdm=True,
                                                      override_bs=override_bs)
            results.update(zip(too_long, truncated, strict=True))
        size = override_bs or (self.batch_size if isinstance(self.batch_size, int) else 0) or 32
        if self.share_stems:
            groups = [groups[i] for i in order_by_family([g.context[:-1] for g in groups], max(2, size // 4))]
        self._stems: dict[tuple[int, ...], Any] = {}
        bar = tqdm(total=len(requests) - len(too_long), disable=disable_tqdm or self.rank != 0,
                   desc="Running loglikelihood requests (shared contexts)")
        for chunk in _chunks(groups, requests, size):
            scored = self._score_chunk(chunk, requests)
            for index, score in scored.items():
                if requests[index][0] is not None:  # loglikelihood_rolling's windows are cached per document
                    self.cache_hook.add_partial("loglikelihood", requests[index][0], score)
            results.update(scored)
            bar.update(len(scored))
        bar.close()
        self._stems = {}
        return [results[i] for i in range(len(requests))]

    def _score_chunk(self, chunk: list[ContextGroup], requests: Sequence[Request]) -> dict[int, Score]:
        """One prefill of the chunk's contexts and one pass of their continuation rows."""
        prefixes = [group.context[:-1] for group in chunk]
        width = max(len(p) for p in prefixes)
        rows: list[tuple[int, tuple[int, ...]]] = []  # (group's position in the chunk, input tokens)
        row_of: dict[int, int] = {}
        for position, group in enumerate(chunk):
            seen: dict[tuple[int, ...], int] = {}
            for index in group.members:
                tokens = (group.context[-1], *requests[index][2][:-1])
                row_of[index] = seen.setdefault(tokens, len(rows))
                if row_of[index] == len(rows):
                    rows.append((position, tokens))
        logprobs = self._continue(self._prefill(prefixes, width), rows, [len(p) for p in prefixes], width)
        scores = {}
        for index, row in row_of.items():
            target = torch.tensor(requests[index][2], dtype=torch.long, device=logprobs.device)
            picked = logprobs[row, : len(target)]
            greedy = bool((picked.argmax(dim=-1) == target).all())
            scores[index] = (float(picked.gather(1, target.unsqueeze(-1)).sum()), greedy)
        return scores

    def _autocast(self) -> Any:
        """HFLM's forward context: no gradients, its optional mixed precision."""
        return torch.autocast(device_type=self.device.type, dtype=self.mixed_precision_dtype,
                              enabled=self.mixed_precision_dtype is not None)

    def _prefill(self, prefixes: list[tuple[int, ...]], width: int) -> Any:
        """The contexts' keys and values (right-padded to `width`), or None when every prefix is empty.

        Their common stem runs once (batch 1) and each context's rest runs on a copy of its keys and values.
        """
        if width == 0:
            return None
        shared = common_stem(prefixes) if self.share_stems else 0
        cache = None
        if shared:
            cache = copy.deepcopy(self._stem_cache(prefixes[0][:shared]))
            cache.batch_repeat_interleave(len(prefixes))
            if shared == width:
                return cache
        pad = self.tokenizer.pad_token_id or 0
        ids = torch.tensor([list(p[shared:]) + [pad] * (width - len(p)) for p in prefixes], dtype=torch.long,
                           device=self.device)  # right padding: never seen by the real positions before it
        with torch.no_grad(), self._autocast():  # the decoder alone: no logits over the vocabulary
            return self.model.base_model(input_ids=ids, past_key_values=cache, use_cache=True).past_key_values

    def _stem_cache(self, stem: tuple[int, ...]) -> Any:
        """The keys and values of `stem` (batch 1), kept while consecutive passes share it."""
        stems = getattr(self, "_stems", None)
        if stems is None:
            stems = self._stems = {}
        if stem not in stems:
            stems.clear()  # passes come family by family: an earlier stem is not asked for again
            ids = torch.tensor([list(stem)], dtype=torch.long, device=self.device)
            with torch.no_grad(), self._autocast():
                stems[stem] = self.model.base_model(input_ids=ids, use_cache=True).past_key_values
        return stems[stem]

    def _continue(self, cache: Any, rows: list[tuple[int, tuple[int, ...]]], lengths: list[int],
                  width: int) -> torch.Tensor:
        """Log-probabilities [rows, longest row, vocab] of the continuation rows on their context's cache."""
        longest = max(len(tokens) for _, tokens in rows)
        ids = torch.tensor([list(t) + [t[-1]] * (longest - len(t)) for _, t in rows], dtype=torch.long,
                           device=self.device)  # right padding: never seen by the real positions before it
        owner = [position for position, _ in rows]
        kwargs: dict[str, Any] = {}
        if cache is not None:
            cache.batch_select_indices(torch.tensor(owner, device=self.device))
            kwargs["past_key_values"] = cache
        if any(length != width for length in lengths):  # shorter contexts: mask their padding, restart positions
            mask = torch.ones(len(rows), width + longest, dtype=torch.long, device=self.device)
            for row, position in enumerate(owner):
                mask[row, lengths[position]:width] = 0
            offsets = torch.tensor([lengths[p] for p in owner], device=self.device).unsqueeze(1)
            kwargs["attention_mask"] = mask
            kwargs["position_ids"] = offsets + torch.arange(longest, device=self.device).unsqueeze(0)
        with torch.no_grad(), self._autocast():
            logits = self.model(input_ids=ids, use_cache=cache is not None, **kwargs).logits
        return F.log_softmax(logits, dim=-1, dtype=self.softmax_dtype)
