"""Math word problems and competition math: GSM8K (four forms), MGSM, MATH-500."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from captrack.official.configs import OfficialConfig
from captrack.official.sources import builder, read_csv, read_jsonl, sample
from captrack.official.sources.adapt import (
    GSM8K_SCHEMA,
    GSM8K_TABLE_SCHEMA,
    question_first,
    schema_prompt,
)

Row = dict[str, Any]
_ANSWER_LINE = "Show your reasoning, then give the final answer on the last line as 'Answer: <number>'."
MGSM_LANGUAGES = ("bn", "de", "en", "es", "fr", "ja", "ru", "sw", "te", "th", "zh")


def _gsm8k_items(sources: Path, config: OfficialConfig) -> list[Row]:
    """The GSM8K test items of the sample; every form of GSM8K draws the same ones."""
    items = read_jsonl(sources / "gsm8k" / "test.jsonl")
    for i, item in enumerate(items):
        item["index"] = i
    return sample(items, config.size, config.seed)


def _gold(answer: str) -> str:
    return answer.split("####")[-1].strip().replace(",", "")


@builder("gsm8k.subset", "gsm8k.rephrased", "gsm8k.schema", "gsm8k.table_schema")
def gsm8k(sources: Path, config: OfficialConfig) -> list[Row]:
    """GSM8K test problems; the form follows the config's name."""
    form = config.name.split(".")[1]
    rows = []
    for item in _gsm8k_items(sources, config):
        question = item["question"].strip()
        schema: dict[str, Any] | None = None
        if form == "subset":
            prompt = f"Solve the following math problem. {_ANSWER_LINE}\n\n{question}"
        elif form == "rephrased":
            prompt = f"{question_first(question)}\n\nWork it out step by step and finish with a line 'Answer: <number>'."
        else:
            schema = GSM8K_SCHEMA if form == "schema" else GSM8K_TABLE_SCHEMA
            prompt = schema_prompt(f"Solve this math problem.\n\n{question}", schema, table=form == "table_schema")
        rows.append({
            "id": f"gsm8k-test-{item['index']}",
            "prompt": prompt,
            "formatted_prompt": f"Question: {question}\nAnswer:",
            "gold": _gold(item["answer"]),
            "meta": {"source_index": item["index"], "form": form, "answer_path": "answer", "answer_kind": "number"},
            "schema": schema,
        })
    return rows


@builder("mgsm.subset")
def mgsm(sources: Path, config: OfficialConfig) -> list[Row]:
    """MGSM: the same number of problems from each of its 11 languages (``size`` in total)."""
    per_language = (config.size or 250 * len(MGSM_LANGUAGES)) // len(MGSM_LANGUAGES)
    rows = []
    for lang in MGSM_LANGUAGES:
        items = read_csv(sources / "mgsm" / f"mgsm_{lang}.tsv", ("question", "answer"), "\t", csv.QUOTE_NONE)
        indexed = [(i, item) for i, item in enumerate(items)]
        for i, item in sample(indexed, per_language, config.seed):
            rows.append({
                "id": f"mgsm-{lang}-{i}",
                "prompt": f"Solve the following math problem. {_ANSWER_LINE}\n\n{item['question'].strip()}",
                "formatted_prompt": f"Question: {item['question'].strip()}\nAnswer:",
                "gold": item["answer"].strip().replace(",", ""),
                "meta": {"language": lang, "source_index": i},
            })
    return rows


@builder("math.subset")
def math_subset(sources: Path, config: OfficialConfig) -> list[Row]:
    """MATH-500 (itself the standard 500-problem subset of the MATH test set)."""
    rows = []
    for item in sample(read_jsonl(sources / "math500" / "math500.jsonl"), config.size, config.seed):
        rows.append({
            "id": str(item["id"]),
            "prompt": (
                "Solve the following problem. Reason step by step and put your final answer "
                f"within \\boxed{{}}.\n\n{item['problem'].strip()}"
            ),
            "formatted_prompt": f"Problem: {item['problem'].strip()}\nSolution:",
            "gold": str(item["answer"]),
            "meta": {"level": item.get("level"), "subject": item.get("subject"), "solution": item.get("solution", "")},
        })
    return rows
