"""Invented names and helpers shared by the probe generators (nothing here exists in the real world)."""

from __future__ import annotations

import random

__all__ = [
    "CRAFTS", "FIRST_NAMES", "FOODS", "LAST_NAMES", "RIVERS", "TOWNS", "WEEKDAYS",
    "level_of", "ordinal", "person", "plan",
]

FIRST_NAMES = (
    "Ada", "Bram", "Cleo", "Dov", "Elin", "Fenna", "Gus", "Hana", "Ivo", "Juna", "Kasper", "Lotte",
    "Mira", "Nils", "Oona", "Pim", "Rosa", "Sten", "Tova", "Ugo", "Vera", "Wim", "Yara", "Zeno",
)
LAST_NAMES = (
    "Brin", "Calder", "Dunmore", "Eskey", "Farrow", "Greavel", "Holm", "Istrand", "Jorvik", "Kettle",
    "Lindqvar", "Morrow", "Nettle", "Orsk", "Pellam", "Quill", "Rask", "Stroud", "Tamsin", "Varga",
)
TOWNS = (
    "Quell", "Varno", "Ostrel", "Brindle", "Kessa", "Morwick", "Tallow", "Zarnak", "Pellin", "Dunsey",
    "Ferrow", "Ilsby", "Cordane", "Haverly", "Lusk", "Nimbrel", "Orrin", "Skelby", "Trask", "Wendle",
)
RIVERS = ("Pell", "Ost", "Varrow", "Kell", "Dune", "Mirr", "Salk", "Tarn", "Ebb", "Lorne")
CRAFTS = (
    "blue pottery", "copper bells", "wool blankets", "glass beads", "cheese wheels", "paper kites",
    "oak barrels", "silver spoons", "rope ladders", "clay whistles",
)
FOODS = ("apples", "muffins", "pears", "cookies", "lemons", "rolls", "plums", "pies")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def level_of(index: int, levels: int = 3) -> int:
    """Difficulty level (1..levels) of item `index`: a fixed cycle, so every seed has the same mix."""
    return index % levels + 1


def plan(index: int, kinds: tuple[str, ...], levels: int = 3) -> tuple[str, int]:
    """Kind and level of item `index`: kinds cycle fastest, then levels (same mix for every seed)."""
    return kinds[index % len(kinds)], (index // len(kinds)) % levels + 1


def person(rng: random.Random, taken: set[str] | None = None) -> str:
    """A fresh invented full name (not in `taken`, which is updated)."""
    taken = taken if taken is not None else set()
    while True:
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if name not in taken:
            taken.add(name)
            return name


def ordinal(n: int) -> str:
    """English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
