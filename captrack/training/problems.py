"""The demo's target domain: generated multi-step arithmetic word problems, as SFT, preference and prompt rows."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "EQUATION",
    "Problem",
    "arithmetic_preference_rows",
    "arithmetic_problems",
    "arithmetic_prompt_rows",
    "arithmetic_sft_rows",
    "evaluate_expression",
    "format_solution",
]


Problem = tuple[str, list[str], int]
"""(question, solution steps, final answer)."""


_NAMES = [
    "Ava", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hiro", "Isla", "Jamal",
    "Kira", "Leo", "Maya", "Noah", "Olga", "Priya", "Quinn", "Rosa", "Sam", "Tara",
]


def _shop(rng: random.Random) -> Problem:
    """Buy several priced items, pay with a bill, get change."""
    name = rng.choice(_NAMES)
    a, pa = rng.randint(2, 9), rng.randint(2, 12)
    b, pb = rng.randint(2, 9), rng.randint(2, 12)
    cost_a, cost_b = a * pa, b * pb
    total = cost_a + cost_b
    paid = (total // 50 + 1) * 50 if total % 50 else total + 50
    question = (
        f"{name} buys {a} notebooks at ${pa} each and {b} pens at ${pb} each. "
        f"{name} pays with ${paid}. How much change does {name} get, in dollars?"
    )
    steps = [
        f"The notebooks cost {a} * {pa} = {cost_a} dollars.",
        f"The pens cost {b} * {pb} = {cost_b} dollars.",
        f"Together they cost {cost_a} + {cost_b} = {total} dollars.",
        f"The change is {paid} - {total} = {paid - total} dollars.",
    ]
    return question, steps, paid - total


def _boxes(rng: random.Random) -> Problem:
    """Fill boxes, remove some, share the rest evenly."""
    name = rng.choice(_NAMES)
    share = rng.randint(2, 6)
    boxes, per_box = rng.randint(3, 12), rng.randint(4, 15)
    total = boxes * per_box
    each = rng.randint(1, (total - 1) // share)
    left = each * share
    eaten = total - left
    question = (
        f"{name} has {boxes} boxes with {per_box} apples in each box. {name} gives away {eaten} apples "
        f"and splits the rest equally among {share} friends. How many apples does each friend get?"
    )
    steps = [
        f"{name} starts with {boxes} * {per_box} = {total} apples.",
        f"After giving away {eaten}, {total} - {eaten} = {left} apples are left.",
        f"Each friend gets {left} / {share} = {each} apples.",
    ]
    return question, steps, each


def _savings(rng: random.Random) -> Problem:
    """Weekly savings minus a purchase."""
    name = rng.choice(_NAMES)
    start, weekly, weeks = rng.randint(10, 90), rng.randint(5, 25), rng.randint(3, 10)
    saved = weekly * weeks
    total = start + saved
    spent = rng.randint(5, total - 1)
    question = (
        f"{name} has ${start} and saves ${weekly} every week for {weeks} weeks. "
        f"Then {name} spends ${spent} on a game. How many dollars does {name} have now?"
    )
    steps = [
        f"{name} saves {weekly} * {weeks} = {saved} dollars.",
        f"{name} then has {start} + {saved} = {total} dollars.",
        f"After the game, {name} has {total} - {spent} = {total - spent} dollars.",
    ]
    return question, steps, total - spent


def _bus(rng: random.Random) -> Problem:
    """Passengers getting on and off over stops."""
    start, on1 = rng.randint(5, 40), rng.randint(2, 20)
    off1 = rng.randint(1, min(10, start + on1 - 1))
    mid = start + on1 - off1
    off2 = rng.randint(1, mid)
    on2 = rng.randint(0, 15)
    end = mid - off2 + on2
    question = (
        f"A bus leaves with {start} passengers. At the first stop {on1} people get on and {off1} get off. "
        f"At the second stop {off2} get off and {on2} get on. How many passengers are on the bus now?"
    )
    steps = [
        f"After the first stop there are {start} + {on1} - {off1} = {mid} passengers.",
        f"After the second stop there are {mid} - {off2} + {on2} = {end} passengers.",
    ]
    return question, steps, end


def _garden(rng: random.Random) -> Problem:
    """Rows of plants, some failing, then a multiplier on yield."""
    name = rng.choice(_NAMES)
    rows, per_row = rng.randint(3, 12), rng.randint(3, 12)
    plants = rows * per_row
    died = rng.randint(1, plants - 1)
    alive = plants - died
    per_plant = rng.randint(2, 9)
    question = (
        f"{name} plants {rows} rows of tomato plants with {per_row} plants in each row. {died} plants die. "
        f"Each remaining plant gives {per_plant} tomatoes. How many tomatoes does {name} pick?"
    )
    steps = [
        f"{name} plants {rows} * {per_row} = {plants} plants.",
        f"{plants} - {died} = {alive} plants survive.",
        f"They give {alive} * {per_plant} = {alive * per_plant} tomatoes.",
    ]
    return question, steps, alive * per_plant


def _pages(rng: random.Random) -> Problem:
    """Reading pages over days at two rates."""
    name = rng.choice(_NAMES)
    d1, r1, d2, r2 = rng.randint(2, 7), rng.randint(5, 30), rng.randint(2, 7), rng.randint(5, 30)
    first, second = d1 * r1, d2 * r2
    read = first + second
    book = read + rng.randint(0, 120)
    question = (
        f"{name}'s book has {book} pages. {name} reads {r1} pages a day for {d1} days, "
        f"then {r2} pages a day for {d2} days. How many pages are left to read?"
    )
    steps = [
        f"First {name} reads {r1} * {d1} = {first} pages.",
        f"Then {name} reads {r2} * {d2} = {second} pages.",
        f"In total {name} reads {first} + {second} = {read} pages.",
        f"{book} - {read} = {book - read} pages are left.",
    ]
    return question, steps, book - read


_GENERATORS: list[Callable[[random.Random], Problem]] = [_shop, _boxes, _savings, _bus, _garden, _pages]


def _everyday(rng: random.Random) -> Problem:
    """One to three small steps about everyday things, the difficulty mix of the C2 word-problem probe."""
    from captrack.probes.world import FIRST_NAMES, FOODS

    name, food, level = rng.choice(FIRST_NAMES), rng.choice(FOODS), rng.randint(1, 4)
    if level <= 2:
        a, b = (rng.randint(2, 6), rng.randint(1, 3)) if level == 1 else (rng.randint(5, 30), rng.randint(3, 20))
        if rng.random() < 0.5:
            return (f"{name} has {a} {food} and gets {b} more. How many {food} does {name} have now?",
                    [f"{name} has {a} + {b} = {a + b} {food}."], a + b)
        return (f"{name} has {a + b} {food} and eats {b} of them. How many {food} are left?",
                [f"{a + b} - {b} = {a} {food} are left."], a)
    if level == 3:
        packs, each, given = rng.randint(2, 6), rng.randint(3, 9), rng.randint(1, 5)
        return (f"{name} has {packs} boxes with {each} {food} in each box and gives {given} {food} away. "
                f"How many {food} does {name} keep?",
                [f"{name} has {packs} * {each} = {packs * each} {food}.", f"{packs * each} - {given} = {packs * each - given} {food} are kept."],
                packs * each - given)
    first, price = rng.randint(4, 15), rng.randint(2, 5)
    cost = first * price
    paid = cost + rng.randint(1, 20)
    return (f"{name} buys {first} {food} at {price} coins each and pays {paid} coins. How many coins does {name} get back?",
            [f"The {food} cost {first} * {price} = {cost} coins.", f"{name} gets {paid} - {cost} = {paid - cost} coins back."],
            paid - cost)


DOMAINS: dict[str, list[Callable[[random.Random], Problem]]] = {"multi_step": _GENERATORS, "everyday": [_everyday]}
"""Problem families a recipe can train on (`domain:`): multi-step shop/savings/bus problems with larger
numbers, or everyday one- to three-step problems at the difficulty of the C2 word-problem probe."""


def arithmetic_problems(n: int, seed: int, domain: str = "multi_step") -> list[Problem]:
    """Generate `n` deterministic arithmetic word problems of `domain` as (question, steps, answer).

    The "everyday" domain leaves out every question the C2 word-problem probe asks at its default
    seed (the demo's evaluation items), so training never sees a test item.
    """
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    if domain not in DOMAINS:
        from captrack.errors import UnknownNameError

        raise UnknownNameError("problem domain", domain, DOMAINS)
    rng = random.Random(f"captrack-arithmetic-{seed}" if domain == "multi_step" else f"captrack-{domain}-{seed}")
    held_out = _probe_questions() if domain == "everyday" else set()
    problems: list[Problem] = []
    while len(problems) < n:
        problem = rng.choice(DOMAINS[domain])(rng)
        if _bare(problem[0]) not in held_out:
            problems.append(problem)
    return problems


def _bare(question: str) -> str:
    """A question without names, foods and wording: its numbers in order (what makes two items the same task)."""
    return " ".join(re.findall(r"\d+", question))


def _probe_questions() -> set[str]:
    """The number patterns of the C2 word-problem probe's items at its default seed (1,000 items)."""
    from captrack.probes.reasoning import word_problems

    return {_bare(item["prompt"]) for item in word_problems(1234, 1000)}


def arithmetic_sft_rows(n: int, seed: int, domain: str = "multi_step") -> list[dict[str, Any]]:
    """Generate `n` deterministic multi-step arithmetic word problems as chat rows ending in `#### <answer>`."""
    return [
        {
            "messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": format_solution(steps, answer)},
            ]
        }
        for question, steps, answer in arithmetic_problems(n, seed, domain)
    ]


def format_solution(steps: list[str], answer: int) -> str:
    """Join worked steps and the final `#### <answer>` line into one assistant reply."""
    return "\n".join(steps) + f"\n#### {answer}"


EQUATION = re.compile(r"(\d+(?: [-+*/] \d+)+) = (\d+)")


_SLIPS = (-10, -2, -1, 1, 2, 10)


def arithmetic_preference_rows(n: int, seed: int, domain: str = "multi_step") -> list[dict[str, Any]]:
    """Conversational prompt/chosen/rejected rows: the SFT problems, correct vs a plausible wrong solution."""
    rng = random.Random(f"captrack-preference-{seed}")
    rows: list[dict[str, Any]] = []
    for question, steps, answer in arithmetic_problems(n, seed, domain):
        wrong_steps, wrong = _wrong_solution(steps, answer, rng)
        rows.append(
            {
                "prompt": [{"role": "user", "content": question}],
                "chosen": [{"role": "assistant", "content": format_solution(steps, answer)}],
                "rejected": [{"role": "assistant", "content": format_solution(wrong_steps, wrong)}],
            }
        )
    return rows


def arithmetic_prompt_rows(n: int, seed: int, domain: str = "multi_step") -> list[dict[str, Any]]:
    """Conversational prompt rows with the gold `answer`, for RL with a verifiable reward (same problems as SFT)."""
    return [
        {"prompt": [{"role": "user", "content": question}], "answer": answer}
        for question, _, answer in arithmetic_problems(n, seed, domain)
    ]


def _wrong_solution(steps: list[str], answer: int, rng: random.Random) -> tuple[list[str], int]:
    """A wrong worked solution: one step stopped short (a third of the time) or an arithmetic slip carried forward."""
    if rng.random() < 1 / 3 and len(steps) > 1:
        short = steps[:-1]
        previous = int(_equation(short[-1]).group(2))
        if previous != answer:
            return short, previous
    for _ in range(20):
        slipped = _slip(steps, rng.randrange(len(steps)), rng.choice(_SLIPS))
        if slipped is not None and slipped[1] != answer:
            return slipped
    slipped = _slip(steps, len(steps) - 1, 1)  # always valid: the last result plus one
    assert slipped is not None
    return slipped


def _slip(steps: list[str], index: int, delta: int) -> tuple[list[str], int] | None:
    """Add `delta` to step `index`'s result and recompute later steps from it; None if a value turns invalid."""
    new_steps = list(steps[:index])
    replaced: dict[int, int] = {}
    value = 0
    for position, step in enumerate(steps[index:], start=index):
        match = _equation(step)
        tokens = match.group(1).split(" ")
        operands = [str(replaced.get(int(t), int(t))) for t in tokens[::2]]
        tokens[::2] = operands
        computed = evaluate_expression(tokens)
        if computed is None:
            return None
        value = computed + delta if position == index else computed
        if value < 0:
            return None
        replaced[int(match.group(2))] = value
        new_steps.append(f"{step[: match.start()]}{' '.join(tokens)} = {value}{step[match.end():]}")
    return new_steps, value


def _equation(step: str) -> re.Match[str]:
    """The `a op b ... = c` equation in a generated solution step."""
    match = EQUATION.search(step)
    if match is None:
        raise ValueError(f"no equation in step {step!r}")
    return match


def evaluate_expression(tokens: list[str]) -> int | None:
    """Evaluate `a op b op c ...` left to right; None for an inexact division."""
    value = int(tokens[0])
    for op, text in zip(tokens[1::2], tokens[2::2], strict=True):
        operand = int(text)
        if op == "+":
            value += operand
        elif op == "-":
            value -= operand
        elif op == "*":
            value *= operand
        elif operand == 0 or value % operand:
            return None
        else:
            value //= operand
    return value
