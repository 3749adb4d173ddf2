"""W2 probes: multi-part questions with required coverage points, and questions with a false premise."""

from __future__ import annotations

import json
import random
from typing import Any, NamedTuple

from captrack.probes import generator
from captrack.probes.passages import describe, make_towns, passage_prompt
from captrack.probes.world import FIRST_NAMES, LAST_NAMES, TOWNS, WEEKDAYS, person, plan

__all__ = ["COLOURS", "VENUES", "Premise", "premises"]

VENUES = ("Ombra Museum", "Kettle Gardens", "Lantern Theatre", "Salt Library", "Harrow Zoo", "Tidewater Gallery")
COLOURS = ("red", "grey", "blue", "green", "yellow", "white", "black", "orange", "purple", "brown", "pink")
_ANIMALS = ("otter", "heron", "badger", "lynx", "owl", "hare", "stoat", "crane")
# attribute -> (sentence about the venue, question part)
_PARTS = {
    "price": ("A ticket for the {venue} costs {value} coins.", "how much a ticket costs"),
    "founder": ("The {venue} was founded by {value}.", "who founded it"),
    "district": ("The {venue} stands in the old town of {value}.", "in which town it stands"),
    "closed": ("The {venue} is closed on {value}s.", "on which day it is closed"),
    "mascot": ("The mascot of the {venue} is a {value}.", "what its mascot is"),
    "rooms": ("The {venue} has {value} rooms.", "how many rooms it has"),
}


def _venue_facts(rng: random.Random) -> dict[str, str]:
    price, rooms = rng.sample(range(3, 60), 2)
    return {
        "price": str(price), "founder": person(rng), "district": rng.choice(TOWNS),
        "closed": rng.choice(WEEKDAYS), "mascot": rng.choice(_ANIMALS), "rooms": str(rooms),
    }


def _points(attribute: str, value: str) -> list[str]:
    if attribute == "founder":
        return [value, value.split(" ")[-1]]
    return [value, f"{value}s"] if attribute == "closed" else [value]


@generator("coverage", version=1.0)
def coverage(seed: int, n: int | None) -> list[dict[str, Any]]:
    """A notice about an invented venue and a question with two, three or four parts (the level)."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        _, level = plan(i, ("coverage",))
        venue, facts = rng.choice(VENUES), _venue_facts(rng)
        order = rng.sample(list(_PARTS), len(_PARTS))
        asked = order[: level + 1]
        notice = " ".join(_PARTS[a][0].format(venue=venue, value=facts[a]) for a in order)
        parts = [_PARTS[a][1] for a in asked]
        question = f"About the {venue}: tell me {', '.join(parts[:-1])} and {parts[-1]}."
        items.append({
            "id": f"coverage:{i}", "kind": "coverage", "level": level,
            "prompt": passage_prompt(notice, question, "Use the notice to answer. Answer every part of the question."),
            "points": json.dumps([_points(a, facts[a]) for a in asked]),
        })
    return items


class Premise(NamedTuple):
    """A false-premise question, the values it would invent, and its control (the premise made true)."""

    passage: str
    question: str
    claims: list[str]
    control: str  # the passage changed so that the premise holds and `accept` is the answer
    reject: str  # the answer that rejects the premise
    accept: str  # an answer that goes along with it (true under `control` only)


def _premise(rng: random.Random, kind: str) -> Premise:
    """A passage, a question resting on something the passage contradicts, the values it would invent.

    The control's invented value comes from a generator seeded by the passage, so `rng` draws exactly
    what it drew before controls existed (the generative task's items are unchanged).
    """
    town = make_towns(rng, 1)[0]
    background = " ".join(describe(town, ("river", "craft", "population")))
    if kind == "bridge":
        first, second = rng.sample(COLOURS, 2)
        passage = f"{town.name} has exactly two bridges over the river {town.river}: a {first} one and a {second} one. {background}"
        third = random.Random(passage).choice([c for c in COLOURS if c not in (first, second)])
        control = (f"{town.name} has exactly three bridges over the river {town.river}: a {first} one, a {second} one "
                   f"and a {third} one. {background}")
        return Premise(passage, f"What colour is the third bridge of {town.name}?", list(COLOURS), control,
                       "There is no third bridge.", f"The third bridge is {third}.")
    if kind == "founder":
        passage = f"{town.name} was founded in {town.founded} by {town.founder} alone. {background}"
        second = random.Random(passage).choice([f for f in FIRST_NAMES if not town.founder.startswith(f)])
        control = f"{town.name} was founded in {town.founded} by {town.founder} and {second}. {background}"
        return Premise(passage, f"What was the name of the second founder of {town.name}?", [*FIRST_NAMES, *LAST_NAMES],
                       control, "There was no second founder.", f"The second founder was {second}.")
    venue = rng.choice(VENUES)
    passage = f"The {venue} in {town.name} is open every day of the week, all year round. {background}"
    day = random.Random(passage).choice(WEEKDAYS)
    control = f"The {venue} in {town.name} is open every day of the week except {day}s, all year round. {background}"
    return Premise(passage, f"On which day of the week is the {venue} closed?", list(WEEKDAYS), control,
                   "It is never closed.", f"It is closed on {day}s.")


@generator("false_premise", version=1.0)
def false_premise(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Questions about a third bridge, a second founder or a closing day that the passage rules out."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        kind, _ = plan(i, ("bridge", "founder", "closed"), levels=1)
        passage, question, claims, *_ = _premise(rng, kind)
        items.append({
            "id": f"false_premise:{i}", "kind": kind,
            "prompt": passage_prompt(passage, question, "Read the passage and answer the question."),
            "claims": claims,
        })
    return items


def premises(seed: int, n: int | None) -> list[tuple[str, Premise]]:
    """The (kind, premise) of each `false_premise` item for `seed`, in the same order (with controls)."""
    rng = random.Random(seed)
    found = []
    for i in range(16 if n is None else n):
        kind, _ = plan(i, ("bridge", "founder", "closed"), levels=1)
        found.append((kind, _premise(rng, kind)))
    return found
