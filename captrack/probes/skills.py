"""C1 probe: skills with one exact answer: multi-digit arithmetic, date arithmetic, tracing a small program."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

from captrack.probes import generator
from captrack.probes.world import WEEKDAYS, plan

__all__ = ["arithmetic", "calendar", "program", "short_item"]

KINDS = ("arithmetic", "dates", "program")
_MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September",
    "October", "November", "December",
)


def short_item(
    item_id: str, kind: str, level: int, question: str, answer: str, answer_type: str,
    aliases: list[str] | None = None, distractors: list[str] | None = None,
) -> dict[str, Any]:
    """A short-answer item in the shape the ``short_answer`` scorer reads."""
    return {
        "id": item_id, "kind": kind, "level": level, "prompt": f"Question: {question}\nAnswer:",
        "answer": answer, "answer_type": answer_type, "aliases": aliases or [],
        "distractors": distractors or [],
    }


def arithmetic(rng: random.Random, level: int) -> tuple[str, int]:
    """An arithmetic question and its answer: 1-digit sums, 2-digit sums, 3-digit sums/differences, products."""
    if level == 1:
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        return f"What is {a} + {b}?", a + b
    if level == 2:
        a, b = rng.randint(11, 89), rng.randint(11, 89)
        return f"What is {a} + {b}?", a + b
    if level == 3:
        a, b = rng.randint(120, 899), rng.randint(120, 899)
        if rng.random() < 0.5:
            return f"What is {a} + {b}?", a + b
        a, b = max(a, b), min(a, b)
        return f"What is {a} - {b}?", a - b
    a, b = rng.randint(12, 49), rng.randint(12, 29)
    return f"What is {a} * {b}?", a * b


def calendar(rng: random.Random, level: int) -> tuple[str, str, list[str], list[str]]:
    """A date question: the next weekday, a weekday 2-6 or 8-20 days on, or a calendar date 5-20 days on."""
    if level < 4:
        start = rng.randrange(7)
        days = 1 if level == 1 else rng.randint(2, 6) if level == 2 else rng.randint(8, 20)
        answer = WEEKDAYS[(start + days) % 7]
        others = [d for d in WEEKDAYS if d != answer]
        if level == 1:
            return f"Which day of the week comes after {WEEKDAYS[start]}?", answer, [], others
        return f"What day of the week is it {days} days after a {WEEKDAYS[start]}?", answer, [], others
    start_date = dt.date(2023, rng.choice((1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)), rng.randint(18, 28))  # never across a leap day
    days = rng.randint(5, 20)
    end = start_date + dt.timedelta(days=days)
    month, day = _MONTHS[end.month - 1], end.day
    question = (
        f"What is the date {days} days after {_MONTHS[start_date.month - 1]} {start_date.day}? "
        "Give the month and the day."
    )
    aliases = [f"{day} {month}", f"{month} {day}th", f"{day}th {month}", f"{day}th of {month}", f"{month} the {day}th"]
    if day % 10 in (1, 2, 3) and day not in (11, 12, 13):
        suffix = {1: "st", 2: "nd", 3: "rd"}[day % 10]
        aliases += [f"{month} {day}{suffix}", f"{day}{suffix} {month}", f"{day}{suffix} of {month}"]
    return question, f"{month} {day}", aliases, []


def program(rng: random.Random, level: int) -> tuple[str, int]:
    """A small Python program and what it prints: a print, one variable, two variables, or a loop."""
    a, b, c = rng.randint(2, 9), rng.randint(2, 9), rng.randint(2, 5)
    if level == 1:
        code = f"x = {a}\nprint(x)"
        value = a
    elif level == 2:
        code = f"x = {a}\nprint(x + {b})"
        value = a + b
    elif level == 3:
        code = f"x = {a}\ny = x * {c}\nprint(y - {b})"
        value = a * c - b
    else:
        stop = rng.randint(3, 5)
        code = f"total = {a}\nfor i in range(1, {stop}):\n    total = total + i * {c}\nprint(total)"
        value = a + sum(i * c for i in range(1, stop))
    return f"What does this Python program print?\n\n{code}\n\nReply with just the output.", value


@generator("skills", version=1.1)
def skills(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Arithmetic, date and program-tracing items; kinds and levels 1-4 cycle, values come from `seed`.

    An item whose prompt was already drawn is drawn again (same kind and level), so no item repeats.
    """
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    asked: set[str] = set()
    for i in range(24 if n is None else n):
        kind, level = plan(i, KINDS, levels=4)
        for _ in range(100):
            item = _skill(rng, f"skills:{i}", kind, level)
            if item["prompt"] not in asked:
                break
        asked.add(item["prompt"])
        items.append(item)
    return items


def _skill(rng: random.Random, item_id: str, kind: str, level: int) -> dict[str, Any]:
    if kind == "arithmetic":
        question, value = arithmetic(rng, level)
        return short_item(item_id, kind, level, f"{question} Reply with just the number.", str(value), "number")
    if kind == "dates":
        question, answer, aliases, others = calendar(rng, level)
        return short_item(item_id, kind, level, question, answer, "text", aliases, others)
    question, value = program(rng, level)
    return short_item(item_id, kind, level, question, str(value), "number")
