"""C5b probe: the C1 skills in unfamiliar surface forms and domains.

Arithmetic on numbers written in words, conversions between invented units, and weekday arithmetic
on an invented calendar: the skill is the same as in C1, only the surface is new.
"""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator
from captrack.probes.skills import short_item
from captrack.probes.world import plan

__all__ = ["spell"]

_ONES = (
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
)
_TENS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_UNITS = ("glim", "pod", "zup", "varn", "tesk", "mrob")
_PLANETS = ("Zorb", "Quollo", "Verdis", "Pranx")
_DAYS = ("Ulda", "Barn", "Kesh", "Dovo", "Mirra", "Tepp", "Zoll")


def spell(n: int) -> str:
    """English words for 0 <= n < 1000 ("three hundred and twelve")."""
    if not 0 <= n < 1000:
        raise ValueError(f"spell() covers 0..999, got {n}")
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else f"-{_ONES[n % 10]}")
    rest = n % 100
    return f"{_ONES[n // 100]} hundred" + ("" if rest == 0 else f" and {spell(rest)}")


def _words(rng: random.Random, level: int) -> tuple[str, int]:
    if level == 1:
        a, b = rng.randint(1, 4), rng.randint(1, 4)
        return f"What is {spell(a)} plus {spell(b)}?", a + b
    if level == 2:
        a, b = rng.randint(5, 9), rng.randint(5, 9)
        return f"What is {spell(a)} plus {spell(b)}?", a + b
    if level == 3:
        a, b = rng.randint(21, 79), rng.randint(21, 79)
        return f"What is {spell(a)} plus {spell(b)}?", a + b
    a, b = rng.randint(210, 890), rng.randint(21, 99)
    return f"What is {spell(a)} minus {spell(b)}?", a - b


def _units(rng: random.Random, level: int) -> tuple[str, int]:
    big, mid, small = rng.sample(_UNITS, 3)
    planet = rng.choice(_PLANETS)
    a, b, c, d = rng.randint(2, 6), rng.randint(2, 5), rng.randint(2, 4), rng.randint(1, 5)
    rule = f"On the planet {planet}, one {big} is equal to {a} {mid}s."
    if level == 1:
        return f"{rule} How many {mid}s are in one {big}?", a
    if level == 2:
        return f"{rule} How many {mid}s are in {b} {big}s?", a * b
    if level == 3:
        return f"{rule} One {mid} is equal to {c} {small}s. How many {small}s are in {b} {big}s?", a * c * b
    return f"{rule} How many {mid}s are in {b} {big}s and {d} {mid}s together?", a * b + d


def _calendar(rng: random.Random, level: int) -> tuple[str, str, list[str]]:
    week = list(_DAYS[: rng.randint(3, 4) if level == 1 else rng.randint(5, 7)])
    start = rng.randrange(len(week) - 1) if level <= 2 else rng.randrange(len(week))
    steps = 1 if level <= 2 else rng.randint(2, len(week) - 1) if level == 3 else rng.randint(len(week) + 1, 2 * len(week) - 1)
    answer = week[(start + steps) % len(week)]
    question = (
        f"On the planet {rng.choice(_PLANETS)} a week has {len(week)} days, in this order: {', '.join(week)}. "
        f"After the last day the week starts again. Which day comes {steps} day{'s' if steps > 1 else ''} after {week[start]}?"
    )
    return question, answer, [d for d in week if d != answer]


@generator("shifted", version=1.0)
def shifted(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Number-word arithmetic, invented-unit conversions and invented-calendar weekdays; levels 1-4 cycle."""
    rng = random.Random(seed)
    items = []
    for i in range(24 if n is None else n):
        kind, level = plan(i, ("number_words", "invented_units", "invented_calendar"), levels=4)
        item_id = f"shifted:{i}"
        if kind == "invented_calendar":
            question, answer, others = _calendar(rng, level)
            items.append(short_item(item_id, kind, level, question, answer, "text", [], others))
            continue
        question, value = (_words if kind == "number_words" else _units)(rng, level)
        items.append(short_item(item_id, kind, level, f"{question} Reply with the number in digits.", str(value), "number"))
    return items
