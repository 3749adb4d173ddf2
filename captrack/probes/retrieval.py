"""H5 probe: find one or two key-value "needles" in a long generated haystack (lengths configurable).

Lengths are in approximate tokens (``metadata.lengths``, default 1000 and 2000; the probe supports
1k to 32k): the haystack has ``0.75 * length`` words, so the exact token count depends on the
tokenizer while the items stay byte-identical on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from captrack.errors import InputError
from captrack.probes import generator
from captrack.probes.world import CRAFTS, FIRST_NAMES, RIVERS, TOWNS, plan

__all__ = ["DEFAULT_LENGTHS", "haystack"]

DEFAULT_LENGTHS = (1000, 2000)
_KEYS = ("amber", "birch", "cobalt", "dune", "ember", "fjord", "granite", "harbor", "indigo", "juniper", "kestrel", "lagoon")
_FILLER = (
    "The market in {town} opened early, and {name} sold {craft} until noon.",
    "A light rain fell over the river {river} while the ferry crossed twice.",
    "{name} wrote a long letter about the old mill near {town}.",
    "In the evening the square of {town} filled with music and the smell of bread.",
    "The road from {town} to the coast was repaired after the winter storms.",
    "{name} counted the boats on the river {river} and found nothing unusual.",
    "Children in {town} learned to make {craft} at the small school by the bridge.",
    "The library of {town} kept maps of every path along the river {river}.",
)


def _sentence(rng: random.Random) -> str:
    return rng.choice(_FILLER).format(
        town=rng.choice(TOWNS), name=rng.choice(FIRST_NAMES), craft=rng.choice(CRAFTS), river=rng.choice(RIVERS)
    )


def haystack(rng: random.Random, words: int, needles: Sequence[str], depths: Sequence[float]) -> str:
    """About `words` words of filler with each needle sentence inserted at its relative depth."""
    sentences: list[str] = []
    count = 0
    while count < words:
        sentences.append(_sentence(rng))
        count += len(sentences[-1].split())
    for needle, depth in sorted(zip(needles, depths, strict=True), key=lambda pair: -pair[1]):
        sentences.insert(round(depth * len(sentences)), needle)
    return " ".join(sentences)


def _lengths(lengths: Any) -> list[int]:
    values = str(lengths).split(",") if isinstance(lengths, int | str) else list(lengths)
    try:
        found = [int(v) for v in values]
    except ValueError:
        found = []
    if not found or any(not 100 <= v <= 131072 for v in found):
        raise InputError(f"metadata.lengths must be token counts between 100 and 131072, got {lengths!r}")
    return found


@generator("retrieval", version=1.0)
def retrieval(seed: int, n: int | None, lengths: Any = DEFAULT_LENGTHS) -> list[dict[str, Any]]:
    """Single-key (level 1) and two-key (level 2) lookups among four needles, lengths cycling over `lengths`."""
    rng = random.Random(seed)
    sizes = _lengths(lengths)
    items = []
    for i in range(8 if n is None else n):
        _, level = plan(i, ("retrieval",), levels=2)
        length = sizes[(i // 2) % len(sizes)]
        keys = rng.sample(_KEYS, 4)
        values = rng.sample(range(10000, 99999), 4)
        needles = [f"The secret number for {k} is {v}." for k, v in zip(keys, values, strict=True)]
        depths = [rng.uniform(0.05, 0.95) for _ in needles]
        asked = list(range(level))
        names = " and ".join(keys[a] for a in asked)
        question = f"What is the secret number for {names}?" if level == 1 else f"What are the secret numbers for {names}?"
        text = haystack(rng, int(length * 0.75), needles, depths)
        items.append({
            "id": f"retrieval:{i}", "kind": f"{level}-key", "level": level, "length": length,
            "prompt": f"{text}\n\nQuestion: {question} Reply with just the number{'s' if level > 1 else ''}.\nAnswer:",
            "answer": ", ".join(str(values[a]) for a in asked), "answer_type": "numbers", "aliases": [],
            "distractors": [str(values[a]) for a in range(len(keys)) if a not in asked],
        })
    return items
