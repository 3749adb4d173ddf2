"""H4 probe: two-turn conversations; turn 2 asks back about turn 1, adds a constraint, or both.

Turn-2 answers are checked with the H1 constraint checks (a recalled fact is a required keyword).
Docs carry the conversation as chat messages (``turns``) and as a plain transcript (``prompt``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from captrack.probes import generator
from captrack.probes.world import FIRST_NAMES, FOODS, TOWNS, WEEKDAYS, plan

__all__ = ["Draw", "conversation", "draws", "recall_turn", "transcript"]

_REPLY = "That sounds lovely! How can I help?"
_CONSTRAINTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("written entirely in lowercase letters", {"kind": "lowercase"}),
    ("written entirely in capital letters", {"kind": "uppercase"}),
    ("in at most 15 words", {"kind": "max_words", "n": 15}),
    ("ending with the exact phrase 'Have fun!'", {"kind": "end_with", "phrase": "Have fun!"}),
)


_COUNTS = tuple(str(k) for k in range(3, 13))
_AGES = tuple(str(k) for k in range(2, 16))
Fact = tuple[str, str, str, tuple[str, ...]]  # value, question about it, description, the pool it is drawn from


def _scenario(rng: random.Random) -> tuple[str, str, list[Fact]]:
    """Turn 1, the topic, and the facts it states."""
    choice = rng.randrange(3)
    if choice == 0:
        day, friend, count, food = rng.choice(WEEKDAYS), rng.choice(FIRST_NAMES), rng.randint(3, 12), rng.choice(FOODS)
        return (
            f"I'm organising a picnic on {day}. My friend {friend} is bringing {count} {food}.", "the picnic",
            [(friend, "What is my friend's name?", "my friend's name", FIRST_NAMES),
             (str(count), f"How many {food} is my friend bringing?", f"how many {food} my friend is bringing", _COUNTS),
             (day, "On which day is the picnic?", "the day of the picnic", WEEKDAYS)],
        )
    if choice == 1:
        name, age = rng.choice(FIRST_NAMES), rng.randint(2, 15)
        return (
            f"My cat is called {name} and she is {age} years old.", "my cat",
            [(name, "What is my cat called?", "my cat's name", FIRST_NAMES), (str(age), "How old is my cat?", "my cat's age", _AGES)],
        )
    town, aunt = rng.choice(TOWNS), rng.choice(FIRST_NAMES)
    return (
        f"Next week I'm travelling to {town} to visit my aunt {aunt}.", "my trip",
        [(town, "Where am I travelling to?", "where I'm travelling", TOWNS),
         (aunt, "What is my aunt's name?", "my aunt's name", FIRST_NAMES)],
    )


def transcript(turns: list[dict[str, str]]) -> str:
    """The conversation as plain text for models without a chat template, ending on the assistant's turn."""
    lines = [f"{'User' if t['role'] == 'user' else 'Assistant'}: {t['content']}" for t in turns]
    return "\n".join([*lines, "Assistant:"])


@dataclass(frozen=True)
class Draw:
    """What item i of a seed draws: its level, turn 1, topic, the fact asked about and the constraint."""

    level: int
    first: str
    topic: str
    value: str
    question: str
    description: str
    phrase: str
    constraint: dict[str, Any]
    pool: tuple[str, ...]  # the values the fact is drawn from


def draws(seed: int, n: int | None) -> list[Draw]:
    """The items' draws in generation order (the `multiturn` items and their forced-choice twin share them)."""
    rng = random.Random(seed)
    out = []
    for i in range(16 if n is None else n):
        _, level = plan(i, ("multiturn",))
        first, topic, facts = _scenario(rng)
        value, question, description, pool = rng.choice(facts)
        phrase, constraint = rng.choice(_CONSTRAINTS)
        out.append(Draw(level, first, topic, value, question, description, phrase, constraint, pool))
    return out


def recall_turn(draw: Draw) -> str:
    """Level 1's turn 2: the question about the fact."""
    return f"{draw.question} Answer in one short sentence."


@generator("multiturn", version=1.0)
def multiturn(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Level 1 recall, level 2 a new constraint, level 3 recall under a new constraint."""
    items = []
    for i, d in enumerate(draws(seed, n)):
        if d.level == 1:
            second, specs = recall_turn(d), [{"kind": "include_keywords", "keywords": [d.value]}]
        elif d.level == 2:
            second, specs = f"Give me one tip for {d.topic}, {d.phrase}.", [d.constraint]
        else:
            second = f"Now write one sentence that mentions {d.description}, {d.phrase}."
            specs = [{"kind": "include_keywords", "keywords": [d.value]}, d.constraint]
        items.append({
            "id": f"multiturn:{i}", "kind": "multiturn", "level": d.level, "prompt": transcript(conversation(d.first, second)),
            "turns": json.dumps(conversation(d.first, second)), "constraints": json.dumps(specs, sort_keys=True),
        })
    return items


def conversation(first: str, second: str) -> list[dict[str, str]]:
    """Turn 1, the scripted assistant reply, turn 2."""
    return [{"role": "user", "content": first}, {"role": "assistant", "content": _REPLY}, {"role": "user", "content": second}]
