"""The longest request an evaluation sends, in tokens: what its planned GPU memory is sized for.

The memory planner (captrack.backends.memory_plan) books KV cache, logits and activations for batches of
sequences of one length. Planned for a fixed 4,096 tokens, a 135M evaluation of the probes was booked tens of
GB per GPU; the probes' requests are a few hundred tokens. Here the length comes from the tasks themselves:

- the prompts: every evaluated document's ``doc_to_text`` (the first ``limit``/``items`` documents), counted
  with the model's own tokenizer, plus the task's ``description`` and the chat template's markers;
- what follows: a generative task's ``generation_kwargs.max_gen_toks`` (lm-eval's 256 when unset), a
  forced-choice task's longest choice (its UTF-8 bytes: a bound on its tokens).

The longest request over all tasks is the length planned. Only the probes' prompts are read (their items are
generated here; another task's data may be a download, never fetched to plan or in a dry run). Where the length
cannot be known (another task, no tokenizer beside the weights yet, few-shot prompts, a task that does not load,
prompts that are no text) the plan keeps the 4,096-token assumption and says why.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["ASSUMED_TOKENS", "RequestLength", "longest_request"]

ASSUMED_TOKENS = 4096
"""The length planned when the tasks' own cannot be known."""
_DEFAULT_GEN_TOKS = 256  # lm-eval's HFLM max_gen_toks when a task names none
_ROUND = 64
_LOCAL_PREFIX = "captrack_probe_"
"""Tasks whose items are generated here (captrack.probes): their prompts are read to plan; others are not."""


@dataclass(frozen=True)
class RequestLength:
    """The longest request of an evaluation, in tokens, and how it was found."""

    tokens: int
    known: bool
    why: str
    """A line: which task's request is longest (known), or why the assumption stands."""


@dataclass(frozen=True)
class _TaskRequests:
    task: str
    prompts: tuple[str, ...]
    """Every evaluated prompt, longest (in UTF-8 bytes) first."""
    after: int
    """Tokens after the prompt at most: max_gen_toks, or the longest choice's bytes."""


def _evaluated(task: Any, count: int, limit: float | None, items: int | None) -> list[Any]:
    """The documents lm-eval evaluates: the first `items`, else the first `limit` (a fraction: of all), else all."""
    docs = list(task.eval_docs)
    if items is not None:
        return docs[:items]
    if isinstance(limit, float):
        return docs[:math.ceil(limit * count)]
    return docs[:limit] if limit is not None else docs


def _task_requests(name: str, task: Any, limit: float | None, items: int | None) -> _TaskRequests | str:
    """One task's prompts and what follows them, or why they cannot be known."""
    config = task.config
    if config.num_fewshot:
        return f"{name} prompts with {config.num_fewshot} few-shot examples"
    docs = _evaluated(task, len(task.eval_docs), limit, items)
    prompts = [task.doc_to_text(doc) for doc in docs]
    if not all(isinstance(p, str) for p in prompts):
        return f"{name}'s prompts are not text"
    description = str(config.description or "")
    if config.output_type == "generate_until":
        after = int((config.generation_kwargs or {}).get("max_gen_toks", _DEFAULT_GEN_TOKS))
    else:
        choices = [c for doc in docs for c in (task.doc_to_choice(doc) or [])]
        after = max((len(f"{config.target_delimiter}{c}".encode()) for c in choices), default=0)
    ordered = sorted({description + p for p in prompts}, key=lambda p: -len(p.encode()))
    return _TaskRequests(name, tuple(ordered), after)


@lru_cache(maxsize=4)
def _requests(tasks: tuple[str, ...], metadata: str, limit: float | None, items: str) -> tuple[_TaskRequests | str, ...]:
    """Every task's requests (cached: every evaluation of one experiment asks the same)."""
    from captrack.lmeval import task_manager

    wanted = json.loads(items)
    manager = task_manager(metadata=json.loads(metadata) or None, include_defaults=not all(t.startswith("captrack") for t in tasks))
    found: list[_TaskRequests | str] = []
    for name in manager.match_tasks(list(tasks)):
        if not name.startswith(_LOCAL_PREFIX):  # its data may be a download: never fetched to plan, nor in a dry run
            found.append(f"{name}'s prompts are read only when it runs")
            continue
        try:
            task = manager.load([name])["tasks"][name]
            found.append(_task_requests(name, task, limit, wanted.get(name)))
        except Exception as exc:  # a task whose data is not here: the evaluation says why; the plan assumes
            found.append(f"{name} did not load here ({type(exc).__name__})")
    return tuple(found)


def _tokenizer(folder: str) -> Any | None:
    """The tokenizer saved beside the weights in `folder`, None when there is none yet (an alias not resolved, a
    variant not trained) or it does not load."""
    if not any((Path(folder) / name).is_file() for name in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model")):
        return None
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(folder)
    except Exception:  # the evaluation loads it again and says why
        return None


def _longest_tokens(prompts: tuple[str, ...], count: Any) -> int:
    """The most tokens of any prompt; a prompt's tokens never exceed its UTF-8 bytes (+1), so the scan stops there."""
    most = 0
    for prompt in prompts:
        if len(prompt.encode()) + 1 <= most:
            break
        most = max(most, count(prompt))
    return most


@lru_cache(maxsize=16)
def _longest(folder: str, tasks: tuple[str, ...], metadata: str, limit: float | None, items: str, chat: bool) -> RequestLength:
    found = _requests(tasks, metadata, limit, items)
    unknown = [f for f in found if isinstance(f, str)]
    if unknown or not found:
        return RequestLength(ASSUMED_TOKENS, False, f"{ASSUMED_TOKENS:,} tokens assumed: {unknown[0] if unknown else 'no task'}")
    tokenizer = _tokenizer(folder)
    if tokenizer is None:
        return RequestLength(ASSUMED_TOKENS, False, f"{ASSUMED_TOKENS:,} tokens assumed: no tokenizer in {folder} yet")

    def count(text: str) -> int:
        return len(tokenizer(text, add_special_tokens=True)["input_ids"])

    markers = 0
    if chat and getattr(tokenizer, "chat_template", None):
        markers = len(tokenizer.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True)) + 8
    sizes = {r.task: _longest_tokens(r.prompts, count) + markers + r.after for r in found if isinstance(r, _TaskRequests)}
    task = max(sizes, key=lambda t: sizes[t])
    tokens = math.ceil(sizes[task] / _ROUND) * _ROUND
    return RequestLength(tokens, True, f"{tokens:,} tokens planned: {task}'s longest request ({sizes[task]:,} tokens: "
                         "its longest prompt with the chat markers, and what follows it)")


def longest_request(folder: str, tasks: list[str], metadata: dict[str, Any], limit: float | None,
                    items: dict[str, int], chat: bool) -> RequestLength:
    """The longest request of evaluating the weights in `folder` on `tasks` (see the module docstring)."""
    return _longest(str(folder), tuple(tasks), json.dumps(metadata, sort_keys=True, default=str), limit,
                    json.dumps(items, sort_keys=True), bool(chat))
