"""C5a probe: the same multiple-choice items under five prompt forms (plain, two option orders, typos, casual).

Each doc carries all its forms; the task asks every form and scores accuracy across forms and whether
the model picks the same option under all of them (captrack.metrics.form_consistency).
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from captrack.probes import generator
from captrack.probes.facts import FACTS
from captrack.probes.world import plan

__all__ = ["FORM_NAMES", "forms_doc", "typos"]

FORM_NAMES = ("plain", "options", "options_reversed", "typos", "casual")
_KINDS = ("capital", "symbol", "arithmetic", "unit")


def typos(rng: random.Random, sentence: str, count: int = 2) -> str:
    """Swap two adjacent inner letters in `count` words of four letters or more."""
    words = sentence.split(" ")
    candidates = [i for i, w in enumerate(words) if re.fullmatch(r"[A-Za-z]{4,}", w.strip("?.,'"))]
    for i in sorted(rng.sample(candidates, min(count, len(candidates)))):
        word = words[i]
        j = rng.randrange(1, len(word.rstrip("?.,'")) - 2)
        words[i] = word[:j] + word[j + 1] + word[j] + word[j + 2:]
    return " ".join(words)


def forms_doc(item_id: str, kind: str, prompts: list[str], choices: list[list[str]], gold: int) -> dict[str, Any]:
    """A doc asking one item under several forms; choices[f] lists form f's options in canonical order."""
    forms = [{"prompt": p, "choices": c} for p, c in zip(prompts, choices, strict=True)]
    return {
        "id": item_id, "kind": kind, "prompt": prompts[0], "choices": choices[0], "gold": gold,
        "forms": json.dumps(forms, ensure_ascii=False),
    }


def _question(rng: random.Random, kind: str) -> tuple[str, list[str], int]:
    if kind == "arithmetic":
        a, b = rng.randint(11, 49), rng.randint(11, 49)
        total = a + b
        options = [str(v) for v in [total, *rng.sample([x for x in range(22, 99) if x != total], 3)]]
        question = f"What is {a} plus {b}?"
    else:
        template, pairs = FACTS[kind]
        subject, answer = rng.choice(pairs)
        pool = sorted({a for _, a in pairs if a != answer})
        options = [answer, *rng.sample(pool, 3)]
        question = template.format(subject)
    gold_text = options[0]
    rng.shuffle(options)
    return question, options, options.index(gold_text)


@generator("forms", version=1.0)
def forms(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Fact and arithmetic items, each under the five forms of FORM_NAMES."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        kind, _ = plan(i, _KINDS, levels=1)
        question, options, gold = _question(rng, kind)
        listed = ", ".join(options)
        prompts = [
            f"Question: {question}\nAnswer:",
            f"Question: {question}\nOptions: {listed}\nAnswer:",
            f"Question: {question}\nOptions: {', '.join(reversed(options))}\nAnswer:",
            f"Question: {typos(rng, question)}\nAnswer:",
            f"hey, quick one - {question[0].lower()}{question[1:].rstrip('?')}??\nAnswer:",
        ]
        items.append(forms_doc(f"forms:{i}", kind, prompts, [options] * len(prompts), gold))
    return items
