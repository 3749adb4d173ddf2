"""H6 probe: answer from numbered sources about invented towns and cite the supporting source as [n]."""

from __future__ import annotations

import json
import random
from typing import Any

from captrack.probes import generator
from captrack.probes.passages import ATTRIBUTES, describe, make_towns
from captrack.probes.world import plan

__all__ = ["EXAMPLE", "INSTRUCTION"]

INSTRUCTION = (
    "Answer the question in one sentence using the sources, and cite the source you used by its "
    "number in square brackets."
)
EXAMPLE = (
    "Sources:\n[1] Amberly was founded in 1620.\n[2] The river Sorn flows through the middle of Dellow.\n"
    "[3] Today 4100 people live in Hask.\n\nQuestion: Which river flows through Dellow?\n"
    "Answer: The river Sorn flows through Dellow [2]."
)


@generator("citations", version=1.0)
def citations(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Three, four or five one-sentence sources (the level); exactly one answers the question."""
    rng = random.Random(seed)
    items = []
    for i in range(16 if n is None else n):
        asked, level = plan(i, tuple(ATTRIBUTES))
        count = level + 2
        towns = make_towns(rng, count)
        target = rng.randrange(count)
        attributes = [asked if k == target else rng.choice(list(ATTRIBUTES)) for k in range(count)]
        sources = [describe(t, (a,))[0] for t, a in zip(towns, attributes, strict=True)]
        question = ATTRIBUTES[attributes[target]][0].format(town=towns[target].name)
        listing = "\n".join(f"[{k + 1}] {s}" for k, s in enumerate(sources))
        items.append({
            "id": f"citations:{i}", "kind": attributes[target], "level": level,
            "prompt": f"{INSTRUCTION}\n\n{EXAMPLE}\n\nSources:\n{listing}\n\nQuestion: {question}\nAnswer:",
            "n_sources": count, "support": json.dumps([target + 1]),
            "answer": towns[target].value(attributes[target]),
        })
    return items
