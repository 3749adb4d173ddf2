"""Targeted adaptations made by code: JSON-schema and table-schema prompts, rephrased prompt forms.

CapTrack derives its C5a (rephrased) and H2 (schema) configs from the C1 items. Offline there is no
paraphrasing model, so the rephrased forms are made by deterministic rewrites that keep the content and
change the form: the question moves in front of its facts, options are re-ordered, and the
instructions are worded differently. The schema forms wrap the same item in a JSON schema the answer
must validate against.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from typing import Any

__all__ = [
    "GSM8K_SCHEMA",
    "GSM8K_TABLE_SCHEMA",
    "mc_schema",
    "mc_table_schema",
    "permute_options",
    "question_first",
    "schema_prompt",
]

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'])")

GSM8K_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reasoning": {"type": "string", "description": "the worked solution"},
        "answer": {"type": "number", "description": "the final numeric answer"},
    },
    "required": ["reasoning", "answer"],
    "additionalProperties": False,
}

GSM8K_TABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "integer"},
                    "calculation": {"type": "string"},
                    "result": {"type": "number"},
                },
                "required": ["step", "calculation", "result"],
                "additionalProperties": False,
            },
        },
        "answer": {"type": "number"},
    },
    "required": ["steps", "answer"],
    "additionalProperties": False,
}


def mc_schema(labels: Sequence[str]) -> dict[str, Any]:
    """Schema of a multiple-choice answer: the chosen letter and a short justification."""
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "answer": {"type": "string", "enum": list(labels)},
        },
        "required": ["reasoning", "answer"],
        "additionalProperties": False,
    }


def mc_table_schema(labels: Sequence[str]) -> dict[str, Any]:
    """Schema of a multiple-choice answer laid out as a table: one row per option, then the choice."""
    return {
        "type": "object",
        "properties": {
            "options": {
                "type": "array",
                "minItems": len(labels),
                "maxItems": len(labels),
                "items": {
                    "type": "object",
                    "properties": {
                        "letter": {"type": "string", "enum": list(labels)},
                        "correct": {"type": "boolean"},
                    },
                    "required": ["letter", "correct"],
                    "additionalProperties": False,
                },
            },
            "answer": {"type": "string", "enum": list(labels)},
        },
        "required": ["options", "answer"],
        "additionalProperties": False,
    }


def schema_prompt(task: str, schema: dict[str, Any], table: bool) -> str:
    """The task followed by the instruction to answer with JSON that validates against `schema`."""
    layout = (
        "Lay your answer out as the table the schema describes (one object per row). "
        if table else ""
    )
    return (
        f"{task}\n\n{layout}Respond with only a JSON object that validates against this JSON schema, "
        f"with no other text:\n{json.dumps(schema, indent=2)}"
    )


def question_first(problem: str) -> str:
    """A word problem rephrased: its question first, then its facts as a list."""
    sentences = [s.strip() for s in _SENTENCE.split(problem.strip()) if s.strip()]
    if len(sentences) < 2:
        return f"Here is a question to work out: {problem.strip()}"
    *facts, question = sentences
    listed = "\n".join(f"- {fact}" for fact in facts)
    return f"{question}\n\nWhat you know:\n{listed}"


def permute_options(options: Sequence[str], gold: int, seed: str) -> tuple[list[str], int, list[int]]:
    """Options in a new order fixed by `seed`; returns (options, new gold index, original indices)."""
    order = list(range(len(options)))
    rng = random.Random(seed)
    for _ in range(5):
        rng.shuffle(order)
        if len(order) < 2 or order.index(gold) != gold:
            break
    return [options[i] for i in order], order.index(gold), order
