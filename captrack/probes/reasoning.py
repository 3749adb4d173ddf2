"""C2 probes: multi-step arithmetic word problems, and logic puzzles (ordering, syllogism chains) as multiple choice."""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator
from captrack.probes.skills import short_item
from captrack.probes.world import FIRST_NAMES, FOODS, plan

__all__ = ["logic", "word_problems"]

_NONSENSE = ("zorbs", "blickets", "wugs", "daxes", "feps", "glims", "toves", "quibs", "snarks", "yerps")
_TRAITS = ("blue", "heavy", "round", "loud", "shiny", "soft", "warm", "tall", "quick", "striped")
_COMPARATIVES = (("taller", "shorter"), ("older", "younger"), ("faster", "slower"))


def _problem(rng: random.Random, level: int) -> tuple[str, int]:
    """A word problem and its answer: one step with small then larger numbers, two steps, three steps."""
    name, food = rng.choice(FIRST_NAMES), rng.choice(FOODS)
    if level <= 2:
        a, b = (rng.randint(2, 6), rng.randint(1, 3)) if level == 1 else (rng.randint(5, 30), rng.randint(3, 20))
        if rng.random() < 0.5:
            return f"{name} has {a} {food} and buys {b} more. How many {food} does {name} have now?", a + b
        a += b
        return f"{name} has {a} {food} and gives {b} of them away. How many {food} are left?", a - b
    if level == 3:
        packs, each, given = rng.randint(2, 6), rng.randint(3, 9), rng.randint(1, 5)
        return (
            f"{name} buys {packs} bags of {food} with {each} {food} in each bag, then gives {given} "
            f"{food} to a friend. How many {food} does {name} have left?",
            packs * each - given,
        )
    first, fewer, price = rng.randint(4, 15), rng.randint(1, 3), rng.randint(2, 5)
    if rng.random() < 0.5:
        return (
            f"{name} reads {first} pages on Monday, twice as many on Tuesday, and {fewer} fewer pages on "
            f"Wednesday than on Tuesday. How many pages does {name} read over the three days?",
            first + 2 * first + (2 * first - fewer),
        )
    paid = first * price + rng.randint(1, 20)
    return (
        f"A market sells {food} for {price} coins each. {name} buys {first} {food} and pays with "
        f"{paid} coins. How many coins of change does {name} get?",
        paid - first * price,
    )


@generator("word_problems", version=1.0)
def word_problems(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Word problems at four levels (one small step, one step, two steps, three steps), numbers from `seed`."""
    rng = random.Random(seed)
    items = []
    for i in range(24 if n is None else n):
        _, level = plan(i, ("word",), levels=4)
        question, value = _problem(rng, level)
        items.append(
            short_item(f"word_problems:{i}", "word", level, f"{question} Reply with just the number.", str(value), "number")
        )
    return items


def _ordering(rng: random.Random, level: int) -> tuple[str, list[str], int]:
    """Which of two people ranks higher in a chain of `level` + 1: read off at level 1, inferred after.

    Level 3 shuffles the statements. Both people are named in the question, so neither option is
    favoured by being mentioned more often.
    """
    names = rng.sample(FIRST_NAMES, level + 1)  # names[0] ranks highest
    comparative, opposite = rng.choice(_COMPARATIVES)
    facts = [f"{names[i]} is {comparative} than {names[i + 1]}." for i in range(level)]
    if level == 3:
        rng.shuffle(facts)
    first, second = {1: (0, 1), 2: (0, 2)}.get(level) or rng.choice(((0, 3), (0, 2), (1, 3)))
    pair = [names[first], names[second]]
    rng.shuffle(pair)
    asked = comparative if level == 1 else rng.choice((comparative, opposite))
    gold_name = names[first] if asked == comparative else names[second]
    question = " ".join(facts) + f" Who is {asked}, {pair[0]} or {pair[1]}?"
    return question, pair, pair.index(gold_name)


def _syllogism(rng: random.Random, level: int) -> tuple[str, list[str], int]:
    """Whether an individual has a trait, through a chain of `level` "all X are Y" rules and a last rule."""
    kinds = rng.sample(_NONSENSE, level)
    trait = rng.choice(_TRAITS)
    name = rng.choice(FIRST_NAMES)
    rules = [f"All {kinds[i]} are {kinds[i + 1]}." for i in range(level - 1)]
    holds = rng.random() < 0.5
    rules.append(f"All {kinds[-1]} are {trait}." if holds else f"No {kinds[-1]} are {trait}.")
    rng.shuffle(rules)
    question = f"{' '.join(rules)} {name} is one of the {kinds[0]}. Is {name} {trait}?"
    return question, ["Yes", "No"], 0 if holds else 1


@generator("logic", version=1.0)
def logic(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Two-person ordering puzzles and syllogism chains (yes/no), three levels each; k = 2 throughout."""
    rng = random.Random(seed)
    items = []
    for i in range(96 if n is None else n):
        kind, level = plan(i, ("ordering", "syllogism"))
        make = _ordering if kind == "ordering" else _syllogism
        question, choices, gold = make(rng, level)
        items.append({"id": f"logic:{i}", "kind": kind, "level": level, "question": question, "choices": choices, "gold": gold})
    return items
