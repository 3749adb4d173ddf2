"""H1 probe: short writing tasks with one or two verifiable constraints attached."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from captrack.probes import generator

__all__ = ["CONFLICTS", "MAKERS", "TASKS", "compatible"]

TASKS = (
    "Write a short note to a neighbour about {}.",
    "Describe {} to a child.",
    "Write a product description for {}.",
    "Summarise why {} matters.",
)
SUBJECTS = (
    "a lost cat", "the village fair", "a rainy weekend", "a new bakery", "an old bridge",
    "a garden party", "the morning bus", "a broken fence", "a school concert", "a quiet lake",
)
KEYWORDS = ("river", "lantern", "orange", "window", "music", "coffee", "ladder", "cloud")
FORBIDDEN = ("very", "really", "nice", "good", "great", "thing")

Constraint = tuple[str, dict[str, Any]]


def _lowercase(rng: random.Random) -> Constraint:
    return "Write your entire answer in lowercase letters only.", {"kind": "lowercase"}


def _uppercase(rng: random.Random) -> Constraint:
    return "Write your entire answer in capital letters.", {"kind": "uppercase"}


def _keywords(rng: random.Random) -> Constraint:
    words = rng.sample(KEYWORDS, 2)
    return (
        f"Include the words '{words[0]}' and '{words[1]}'.",
        {"kind": "include_keywords", "keywords": words},
    )


def _max_words(rng: random.Random) -> Constraint:
    n = rng.choice((20, 30, 40))
    return f"Use at most {n} words.", {"kind": "max_words", "n": n}


def _end_with(rng: random.Random) -> Constraint:
    phrase = rng.choice(("Thank you.", "That is all.", "See you soon."))
    return f"End your answer with the exact phrase '{phrase}'", {"kind": "end_with", "phrase": phrase}


def _bullets(rng: random.Random) -> Constraint:
    n = rng.choice((2, 3, 4))
    return (
        f"Answer with exactly {n} bullet points using '- ' and nothing else.",
        {"kind": "bullet_count", "n": n},
    )


def _no_commas(rng: random.Random) -> Constraint:
    return "Do not use any commas.", {"kind": "forbid_char", "char": ","}


def _start_with(rng: random.Random) -> Constraint:
    phrase = rng.choice(("Dear friend", "Here is my answer", "In short"))
    return f"Start your answer with the exact words '{phrase}'.", {"kind": "start_with", "phrase": phrase}


def _min_words(rng: random.Random) -> Constraint:
    n = rng.choice((25, 35))
    return f"Use at least {n} words.", {"kind": "min_words", "n": n}


def _sections(rng: random.Random) -> Constraint:
    n = rng.choice((2, 3))
    return (
        f"Divide your answer into {n} sections; start each one with a line 'SECTION X' (X = 1, 2, ...).",
        {"kind": "sections", "n": n, "marker": "SECTION"},
    )


def _forbid_words(rng: random.Random) -> Constraint:
    words = rng.sample(FORBIDDEN, 2)
    return f"Do not use the words '{words[0]}' or '{words[1]}'.", {"kind": "forbid_words", "words": words}


def _json(rng: random.Random) -> Constraint:
    return (
        'Answer only with a JSON object with the keys "title" and "text".',
        {"kind": "json_object", "keys": ["title", "text"]},
    )


MAKERS: dict[str, Callable[[random.Random], Constraint]] = {
    "lowercase": _lowercase,
    "uppercase": _uppercase,
    "keywords": _keywords,
    "max_words": _max_words,
    "end_with": _end_with,
    "bullets": _bullets,
    "no_commas": _no_commas,
    "json": _json,
    "start_with": _start_with,
    "min_words": _min_words,
    "sections": _sections,
    "forbid_words": _forbid_words,
}
# Pairs that cannot both hold are never combined.
CONFLICTS = {
    frozenset({"lowercase", "uppercase"}), frozenset({"json", "bullets"}),
    frozenset({"json", "end_with"}), frozenset({"json", "lowercase"}),
    frozenset({"json", "uppercase"}), frozenset({"uppercase", "end_with"}),
    frozenset({"lowercase", "end_with"}), frozenset({"bullets", "end_with"}),
    frozenset({"json", "no_commas"}),
    frozenset({"json", "start_with"}), frozenset({"json", "sections"}), frozenset({"bullets", "sections"}),
    frozenset({"bullets", "start_with"}), frozenset({"max_words", "min_words"}),
    frozenset({"bullets", "min_words"}), frozenset({"lowercase", "sections"}),
}


def compatible(names: list[str]) -> list[str]:
    """The constraint kinds that can join all of `names` (none conflicts with any of them)."""
    return [
        x for x in sorted(MAKERS)
        if x not in names and all(frozenset({x, y}) not in CONFLICTS for y in names)
    ]


@generator("constraints", version=1.1)
def constraints(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Items with one, two, then three mutually compatible constraints (the level cycles), drawn by `seed`."""
    rng = random.Random(seed)
    count = 18 if n is None else n
    items: list[dict[str, Any]] = []
    for i in range(count):
        level = i % 3 + 1
        chosen: list[str] = []
        while len(chosen) < level:
            chosen.append(rng.choice(compatible(chosen)))
        made = [MAKERS[name](rng) for name in chosen]
        task = rng.choice(TASKS).format(rng.choice(SUBJECTS))
        items.append(
            {
                "id": f"constraints:{i}",
                "level": level,
                "prompt": " ".join([task, *(text for text, _ in made)]),
                "constraints": json.dumps([spec for _, spec in made], sort_keys=True),
            }
        )
    return items
