"""Code generation: HumanEval (all 164) and MBPP (the 500-problem test split, task ids 11-510)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from captrack.official.configs import OfficialConfig
from captrack.official.sources import builder, read_jsonl

Row = dict[str, Any]
MBPP_TEST_IDS = range(11, 511)


@builder("humaneval.full")
def humaneval(sources: Path, config: OfficialConfig) -> list[Row]:
    """HumanEval: complete a function; the gold is the unit-test program calling ``check``."""
    path = sources / "humaneval" / "HumanEval.jsonl.gz"
    if not path.is_file():
        raise FileNotFoundError(f"source file {path} is missing")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        items = [json.loads(line) for line in handle if line.strip()]
    return [
        {
            "id": item["task_id"].replace("/", "-"),
            "prompt": (
                "Complete the following Python function. Reply with the whole function (signature "
                f"included) in one ```python code block.\n\n```python\n{item['prompt']}```"
            ),
            "formatted_prompt": item["prompt"],
            "gold": f"{item['test']}\n\ncheck({item['entry_point']})\n",
            "meta": {"entry_point": item["entry_point"], "code_prompt": item["prompt"]},
        }
        for item in items
    ]


@builder("mbpp.full")
def mbpp(sources: Path, config: OfficialConfig) -> list[Row]:
    """MBPP test split: write a function that passes the three given asserts."""
    rows = []
    for item in read_jsonl(sources / "mbpp" / "mbpp.jsonl"):
        if int(item["task_id"]) not in MBPP_TEST_IDS:
            continue
        tests = "\n".join(item["test_list"])
        rows.append({
            "id": f"mbpp-{item['task_id']}",
            "prompt": (
                f"You are an expert Python programmer, and here is your task: {item['text']} "
                f"Your code should pass these tests:\n\n{tests}\n\nReply with the code in one ```python code block."
            ),
            "formatted_prompt": f"{item['text']}\n{tests}\n",
            "gold": f"{item.get('test_setup_code') or ''}\n{tests}\n".lstrip(),
            "meta": {"task_id": item["task_id"]},
        })
    return rows
