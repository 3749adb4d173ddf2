"""W3 probe: open requests that leave length and formatting to the model's defaults."""

from __future__ import annotations

import random
from typing import Any

from captrack.probes import generator

__all__ = ["REQUESTS", "TOPICS"]

REQUESTS = (
    "Explain how {} works.",
    "What should a beginner know about {}?",
    "Give me some advice about {}.",
    "Tell me about {}.",
    "Why do people care about {}?",
    "Compare two common approaches to {}.",
)
TOPICS = (
    "composting", "learning a second language", "bicycle maintenance", "saving money",
    "growing tomatoes", "public libraries", "sleep", "rainwater harvesting", "chess openings",
    "baking bread", "time zones", "recycling plastic", "hiking safety", "writing a cover letter",
    "solar panels", "keeping a journal",
)


@generator("style")
def style(seed: int, n: int | None) -> list[dict[str, Any]]:
    """Pair request templates with topics; no instruction mentions length or format."""
    rng = random.Random(seed)
    pairs = [(r, t) for r in REQUESTS for t in TOPICS]
    rng.shuffle(pairs)
    count = len(TOPICS) if n is None else n
    return [
        {"id": f"style:{i}", "prompt": request.format(topic), "topic": topic}
        for i, (request, topic) in enumerate(pairs[:count])
    ]
