"""C1 probe: multiple-choice questions from a small fact table written by the captrack team."""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator

__all__ = ["FACTS"]

# relation -> (question template, [(subject, answer), ...]); distractors come from the same relation.
FACTS: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "capital": (
        "What is the capital of {}?",
        [
            ("France", "Paris"), ("Japan", "Tokyo"), ("Italy", "Rome"), ("Spain", "Madrid"),
            ("Germany", "Berlin"), ("Canada", "Ottawa"), ("Australia", "Canberra"),
            ("Egypt", "Cairo"), ("Kenya", "Nairobi"), ("Norway", "Oslo"), ("Peru", "Lima"),
            ("Poland", "Warsaw"), ("Portugal", "Lisbon"), ("Greece", "Athens"),
            ("Ireland", "Dublin"), ("Austria", "Vienna"), ("Sweden", "Stockholm"),
            ("Argentina", "Buenos Aires"), ("Thailand", "Bangkok"), ("Russia", "Moscow"),
        ],
    ),
    "symbol": (
        "What is the chemical symbol of {}?",
        [
            ("gold", "Au"), ("silver", "Ag"), ("iron", "Fe"), ("sodium", "Na"),
            ("potassium", "K"), ("lead", "Pb"), ("copper", "Cu"), ("oxygen", "O"),
            ("hydrogen", "H"), ("carbon", "C"), ("nitrogen", "N"), ("helium", "He"),
            ("mercury", "Hg"), ("tin", "Sn"), ("calcium", "Ca"),
        ],
    ),
    "unit": (
        "How many {}?",
        [
            ("centimetres are in one metre", "100"), ("metres are in one kilometre", "1000"),
            ("minutes are in one hour", "60"), ("hours are in one day", "24"),
            ("days are in a week", "7"), ("months are in a year", "12"),
            ("grams are in one kilogram", "1000"), ("seconds are in one minute", "60"),
            ("sides does a hexagon have", "6"), ("legs does a spider have", "8"),
        ],
    ),
    "opposite": (
        "What is the opposite of '{}'?",
        [
            ("hot", "cold"), ("up", "down"), ("early", "late"), ("empty", "full"),
            ("north", "south"), ("open", "closed"), ("win", "lose"), ("buy", "sell"),
        ],
    ),
}


@generator("facts")
def facts(seed: int, n: int | None) -> list[dict[str, Any]]:
    """One four-option question per fact, options shuffled by `seed`; the first `n` after shuffling."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    for relation, (template, pairs) in FACTS.items():
        answers = sorted({answer for _, answer in pairs})
        for subject, answer in pairs:
            distractors = rng.sample([a for a in answers if a != answer], 3)
            choices = [answer, *distractors]
            rng.shuffle(choices)
            items.append(
                {
                    "id": f"{relation}:{subject}",
                    "relation": relation,
                    "question": template.format(subject),
                    "choices": choices,
                    "gold": choices.index(answer),
                }
            )
    rng.shuffle(items)
    return items if n is None else items[:n]
