"""H1 IFEval: every verifiable instruction of a prompt, checked from its instruction id and kwargs.

The checks themselves are IFEval's own (Google's instruction classes, as shipped in lm-eval's
``ifeval`` task and used here as a library); the instructions of an item come from the row's
``instruction_id_list`` and ``kwargs``, never from matching the prompt text. "Loose" accepts a
response when any of IFEval's eight relaxed forms (first/last line dropped, ``*`` removed)
follows the instruction.

Per sample: ``pass_all`` / ``pass_all_loose`` (prompt level) and ``pass_fraction`` /
``pass_fraction_loose`` (share of the item's instructions followed). IFEval's published
instruction-level accuracy pools instructions over all prompts; that corpus statistic is
:func:`instruction_level_accuracy` over :func:`follow_lists`.

IFEval replaces an invalid keyword argument by a random one (two prompts ask for the "letter" ``#``
or ``!``), which makes its reference score vary from run to run. captrack seeds Python's ``random``
with ``RANDOM_FALLBACK_SEED`` while it builds the checkers (and restores the caller's state after),
so its score is reproducible; seeded the same way, the reference gives the same result.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from captrack.errors import InputError
from captrack.metrics import extract
from captrack.metrics.registry import scorer

__all__ = ["RANDOM_FALLBACK_SEED", "follow_lists", "ifeval_metrics", "instruction_level_accuracy", "loose_forms", "prompt_level_accuracy"]

RANDOM_FALLBACK_SEED = 0


def loose_forms(response: str) -> list[str]:
    """IFEval's eight forms of a response for loose checking."""
    lines = response.split("\n")
    dropped = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(), "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *dropped, *(d.replace("*", "") for d in dropped)]


def _instruction(instruction_id: str, kwargs: Mapping[str, Any], prompt: str) -> Any:
    from lm_eval.tasks.ifeval import instructions_registry

    try:
        cls = instructions_registry.INSTRUCTION_DICT[instruction_id]
    except KeyError:
        from captrack.errors import UnknownNameError

        raise UnknownNameError("IFEval instruction", instruction_id, instructions_registry.INSTRUCTION_DICT) from None
    checker = cls(instruction_id)
    checker.build_description(**{k: v for k, v in kwargs.items() if v is not None})
    args = checker.get_instruction_args()
    if args and "prompt" in args:
        checker.build_description(prompt=prompt)
    return checker


def follow_lists(doc: Mapping[str, Any], response: str) -> tuple[list[bool], list[bool]]:
    """Per instruction of the item: followed (strict), followed (loose).

    Raises:
        InputError: the doc has no instructions, or ids and kwargs differ in length.
    """
    ids: Sequence[str] = extract.meta_field(doc, "instruction_id_list") or []
    all_kwargs: Sequence[Mapping[str, Any]] = extract.meta_field(doc, "kwargs") or []
    if not ids or len(ids) != len(all_kwargs):
        raise InputError(
            f"doc {doc.get('id', '?')!r}: IFEval needs instruction_id_list and kwargs of the same length, "
            f"got {len(ids)} ids and {len(all_kwargs)} kwargs"
        )
    forms = [f for f in loose_forms(response) if f.strip()]
    state = random.getstate()
    random.seed(RANDOM_FALLBACK_SEED)
    try:
        # Two passes that build their checkers in the order IFEval's reference does, so that a checker
        # which draws a random value (an invalid kwarg) draws the same one as the reference.
        strict = [
            bool(response.strip()) and bool(_instruction(i, k or {}, str(doc["prompt"])).check_following(response))
            for i, k in zip(ids, all_kwargs, strict=True)
        ]
        loose = []
        for instruction_id, kwargs in zip(ids, all_kwargs, strict=True):
            checker = _instruction(instruction_id, kwargs or {}, str(doc["prompt"]))
            loose.append(any(checker.check_following(form) for form in forms))
    finally:
        random.setstate(state)
    return strict, loose


@scorer("ifeval", produces=("pass_all", "pass_fraction", "pass_all_loose", "pass_fraction_loose"))
def ifeval_metrics(doc: Mapping[str, Any], response: str) -> dict[str, float | None]:
    """Prompt-level pass and share of instructions followed, strict and loose."""
    strict, loose = follow_lists(doc, response)
    return {
        "pass_all": float(all(strict)),
        "pass_fraction": sum(strict) / len(strict),
        "pass_all_loose": float(all(loose)),
        "pass_fraction_loose": sum(loose) / len(loose),
    }


def prompt_level_accuracy(follows: Sequence[Sequence[bool]]) -> float:
    """Share of prompts whose instructions were all followed."""
    return sum(all(f) for f in follows) / len(follows)


def instruction_level_accuracy(follows: Sequence[Sequence[bool]]) -> float:
    """Share of all instructions, pooled over prompts, that were followed (IFEval's instruction level)."""
    pooled = [x for f in follows for x in f]
    return sum(pooled) / len(pooled)
