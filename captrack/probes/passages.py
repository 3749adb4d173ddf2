"""C3 probe: short answers from a generated passage about invented towns (nothing to recall, all to read).

The town world here is shared with the C4, W2 and H6 probes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from captrack.probes import generator
from captrack.probes.world import CRAFTS, RIVERS, TOWNS, person, plan

__all__ = ["ATTRIBUTES", "Town", "describe", "make_towns", "passage_prompt"]


@dataclass(frozen=True)
class Town:
    """An invented town and its facts."""

    name: str
    founded: int
    founder: str
    river: str
    craft: str
    population: int

    def value(self, attribute: str) -> str:
        """The town's value of `attribute` as text."""
        return str(getattr(self, attribute))


# attribute -> (question about {town}, answer type)
ATTRIBUTES: dict[str, tuple[str, str]] = {
    "founded": ("In which year was {town} founded?", "number"),
    "founder": ("Who founded {town}?", "text"),
    "river": ("Which river flows through {town}?", "text"),
    "craft": ("What is {town} known for making?", "text"),
    "population": ("How many people live in {town}?", "number"),
}


def make_towns(rng: random.Random, count: int) -> list[Town]:
    """`count` invented towns whose names and facts are all different from each other."""
    names, rivers, crafts = rng.sample(TOWNS, count), rng.sample(RIVERS, count), rng.sample(CRAFTS, count)
    years = rng.sample(range(1450, 1900), count)
    people = rng.sample(range(1200, 9800), count)
    taken: set[str] = set()
    return [
        Town(names[i], years[i], person(rng, taken), rivers[i], crafts[i], people[i] * 10)
        for i in range(count)
    ]


def describe(town: Town, attributes: tuple[str, ...] = tuple(ATTRIBUTES)) -> list[str]:
    """One sentence per attribute of `town` (in the order given)."""
    sentences = {
        "founded": f"{town.name} was founded in {town.founded}.",
        "founder": f"The town of {town.name} was founded by {town.founder}, a travelling weaver.",
        "river": f"The river {town.river} flows through the middle of {town.name}.",
        "craft": f"{town.name} is known for making {town.craft}.",
        "population": f"Today {town.population} people live in {town.name}.",
    }
    return [sentences[a] for a in attributes]


def passage_prompt(passage: str, question: str, instruction: str) -> str:
    """The prompt layout shared by the passage-based probes."""
    return f"{instruction}\n\nPassage: {passage}\n\nQuestion: {question}\nAnswer:"


@generator("passages", version=1.0)
def passages(seed: int, n: int | None) -> list[dict[str, Any]]:
    """One to three towns per passage (the level); a question about one town, other towns' values as distractors."""
    rng = random.Random(seed)
    items = []
    for i in range(24 if n is None else n):
        attribute, level = plan(i, tuple(ATTRIBUTES))
        towns = make_towns(rng, level)
        sentences = [s for town in towns for s in describe(town, tuple(rng.sample(list(ATTRIBUTES), len(ATTRIBUTES))))]
        target = rng.choice(towns)
        template, answer_type = ATTRIBUTES[attribute]
        others = [t.value(attribute) for t in towns if t is not target]
        prompt = passage_prompt(
            " ".join(sentences), template.format(town=target.name),
            "Read the passage and answer the question with a short answer.",
        )
        items.append({
            "id": f"passages:{i}", "kind": attribute, "level": level, "prompt": prompt,
            "answer": target.value(attribute), "answer_type": answer_type, "aliases": [], "distractors": others,
        })
    return items
