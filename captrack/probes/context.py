"""C4 probe: answer from the passage even against world knowledge, and abstain when it lacks the answer.

Three kinds cycle: ``counterfactual`` (the passage changes a real fact from the C1 fact table; the
real answer is a distractor), ``supported`` (the passage states the real fact: a model that merely
contradicts what it knows fails these) and ``unanswerable`` (an invented town's passage lacks the
asked fact: the answer is an abstention, and the facts the passage does give are distractors).
"""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator
from captrack.probes.facts import FACTS
from captrack.probes.passages import ATTRIBUTES, describe, make_towns, passage_prompt
from captrack.probes.world import plan

__all__ = ["INSTRUCTION"]

INSTRUCTION = (
    "Answer the question using only the passage, even where it differs from what you know. "
    'If the passage does not give the answer, reply "unknown".'
)
_SETTINGS = {
    "capital": ("In the world of this story, the capital of {subject} is {answer}.", "According to the passage, what is the capital of {subject}?"),
    "symbol": ("In this alternative chemistry, the chemical symbol of {subject} is {answer}.", "According to the passage, what is the chemical symbol of {subject}?"),
}
_FILLER = (
    "Travellers describe the place as calm and green.",
    "Most visitors arrive by train in the spring.",
    "The local market opens early on weekdays.",
)


def _fact_item(rng: random.Random, kind: str) -> tuple[str, str, str, list[str]]:
    """A passage stating a (possibly changed) fact, its question, the answer and distractors."""
    relation = rng.choice(sorted(_SETTINGS))
    statement, question = _SETTINGS[relation]
    pairs = FACTS[relation][1]
    subject, real = rng.choice(pairs)
    answer = real
    if kind == "counterfactual":
        answer = rng.choice([a for _, a in pairs if a != real])
    passage = " ".join([statement.format(subject=subject, answer=answer), rng.choice(_FILLER)])
    return passage, question.format(subject=subject), answer, [real] if answer != real else []


@generator("context", version=1.0)
def context(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Counterfactual, supported and unanswerable items in a fixed cycle; entities and facts from `seed`."""
    rng = random.Random(seed)
    items = []
    for i in range(24 if n is None else n):
        kind, level = plan(i, ("counterfactual", "supported", "unanswerable"))
        if kind == "unanswerable":
            town = make_towns(rng, 1)[0]
            attributes = rng.sample(list(ATTRIBUTES), len(ATTRIBUTES))
            asked, given = attributes[0], tuple(attributes[1:3 + level - 1])
            passage = " ".join(describe(town, given))
            question = ATTRIBUTES[asked][0].format(town=town.name)
            answer, answer_type, distractors = "unknown", "abstain", [town.value(a) for a in given]
        else:
            passage, question, answer, distractors = _fact_item(rng, kind)
            answer_type = "text"
        items.append({
            "id": f"context:{i}", "kind": kind, "level": level,
            "prompt": passage_prompt(passage, question, INSTRUCTION),
            "answer": answer, "answer_type": answer_type, "aliases": [], "distractors": distractors,
        })
    return items
