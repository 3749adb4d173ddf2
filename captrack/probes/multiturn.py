"""H4 probe: two-turn conversations; turn 2 asks back about turn 1, adds a constraint, or both.

Turn-2 answers are checked with the H1 constraint checks (a recalled fact is a required keyword).
Docs carry the conversation as chat messages (``turns``) and as a plain transcript (``prompt``).
"""

from __future__ import annotations

import json
import random
from typing import Any

from captrack.probes import generator
from captrack.probes.world import FIRST_NAMES, FOODS, TOWNS, WEEKDAYS, plan

__all__ = ["transcript"]

_REPLY = "That sounds lovely! How can I help?"
_CONSTRAINTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("written entirely in lowercase letters", {"kind": "lowercase"}),
    ("written entirely in capital letters", {"kind": "uppercase"}),
    ("in at most 15 words", {"kind": "max_words", "n": 15}),
    ("ending with the exact phrase 'Have fun!'", {"kind": "end_with", "phrase": "Have fun!"}),
)


def _scenario(rng: random.Random) -> tuple[str, str, list[tuple[str, str, str]]]:
    """Turn 1, the topic, and the facts it states as (value, question about it, description)."""
    choice = rng.randrange(3)
    if choice == 0:
        day, friend, count, food = rng.choice(WEEKDAYS), rng.choice(FIRST_NAMES), rng.randint(3, 12), rng.choice(FOODS)
        return (
            f"I'm organising a picnic on {day}. My friend {friend} is bringing {count} {food}.", "the picnic",
            [(friend, "What is my friend's name?", "my friend's name"),
             (str(count), f"How many {food} is my friend bringing?", f"how many {food} my friend is bringing"),
             (day, "On which day is the picnic?", "the day of the picnic")],
        )
    if choice == 1:
        name, age = rng.choice(FIRST_NAMES), rng.randint(2, 15)
        return (
            f"My cat is called {name} and she is {age} years old.", "my cat",
            [(name, "What is my cat called?", "my cat's name"), (str(age), "How old is my cat?", "my cat's age")],
        )
    town, aunt = rng.choice(TOWNS), rng.choice(FIRST_NAMES)
    return (
        f"Next week I'm travelling to {town} to visit my aunt {aunt}.", "my trip",
        [(town, "Where am I travelling to?", "where I'm travelling"), (aunt, "What is my aunt's name?", "my aunt's name")],
    )


def transcript(turns: list[dict[str, str]]) -> str:
    """The conversation as plain text for models without a chat template, ending on the assistant's turn."""
    lines = [f"{'User' if t['role'] == 'user' else 'Assistant'}: {t['content']}" for t in turns]
    return "\n".join([*lines, "Assistant:"])


@generator("multiturn", version=1.0)
def multiturn(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Level 1 recall, level 2 a new constraint, level 3 recall under a new constraint."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        _, level = plan(i, ("multiturn",))
        first, topic, facts = _scenario(rng)
        value, question, description = rng.choice(facts)
        phrase, constraint = rng.choice(_CONSTRAINTS)
        if level == 1:
            second, specs = f"{question} Answer in one short sentence.", [{"kind": "include_keywords", "keywords": [value]}]
        elif level == 2:
            second, specs = f"Give me one tip for {topic}, {phrase}.", [constraint]
        else:
            second = f"Now write one sentence that mentions {description}, {phrase}."
            specs = [{"kind": "include_keywords", "keywords": [value]}, constraint]
        turns = [{"role": "user", "content": first}, {"role": "assistant", "content": _REPLY}, {"role": "user", "content": second}]
        items.append({
            "id": f"multiturn:{i}", "kind": "multiturn", "level": level, "prompt": transcript(turns),
            "turns": json.dumps(turns), "constraints": json.dumps(specs, sort_keys=True),
        })
    return items
