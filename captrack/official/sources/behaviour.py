"""Behaviour and protocol: IFEval, FollowBench, HarmBench, BFCL, MT-Bench (two turns), OASST1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from captrack.official.configs import OfficialConfig
from captrack.official.sources import builder, read_csv, read_json, read_jsonl, sample

Row = dict[str, Any]
BFCL_CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple")
FOLLOWBENCH_CATEGORIES = ("content", "situation", "style", "format", "example", "mixed")


@builder("ifeval.subset")
def ifeval(sources: Path, config: OfficialConfig) -> list[Row]:
    """IFEval prompts with their instruction ids and keyword arguments (read by the scorer)."""
    rows = []
    for item in sample(read_jsonl(sources / "ifeval" / "input_data.jsonl"), config.size, config.seed):
        rows.append({
            "id": f"ifeval-{item['key']}",
            "prompt": item["prompt"],
            "formatted_prompt": item["prompt"],
            "meta": {"key": item["key"], "instruction_id_list": item["instruction_id_list"], "kwargs": item["kwargs"]},
        })
    return rows


@builder("followbench.subset")
def followbench(sources: Path, config: OfficialConfig) -> list[Row]:
    """FollowBench (English): instructions with 0-5 added constraints; scored by a judge."""
    items = []
    for category in FOLLOWBENCH_CATEGORIES:
        for item in read_json(sources / "followbench" / f"{category}_constraints.json"):
            if not str(item.get("instruction") or "").strip():
                continue  # 17 content rows upstream have an empty instruction
            items.append({
                "id": f"followbench-{category}-{item['example_id']}-{item['level']}",
                "prompt": item["instruction"],
                "formatted_prompt": item["instruction"],
                "gold": str(item.get("target") or ""),
                "meta": {"category": category, "level": item["level"], "example_id": item["example_id"],
                         "source": item.get("source")},
            })
    return sample(items, config.size, config.seed)


@builder("harmbench.subset")
def harmbench(sources: Path, config: OfficialConfig) -> list[Row]:
    """HarmBench test behaviours (standard and contextual; copyright needs a hash classifier, so left out)."""
    rows = []
    for item in read_csv(sources / "harmbench" / "harmbench_behaviors_text_test.csv"):
        category = item["FunctionalCategory"]
        if category not in ("standard", "contextual"):
            continue
        context = (item.get("ContextString") or "").strip()
        prompt = f"{context}\n\n---\n\n{item['Behavior']}" if context else item["Behavior"]
        rows.append({
            "id": f"harmbench-{item['BehaviorID']}",
            "prompt": prompt,
            "formatted_prompt": prompt,
            "ctx": context,
            "meta": {"functional_category": category, "semantic_category": item["SemanticCategory"]},
        })
    return sample(rows, config.size, config.seed)


def _bfcl_prompt(question: str, functions: list[dict[str, Any]]) -> str:
    return (
        "You can call the following functions (JSON descriptions):\n"
        f"{json.dumps(functions, indent=1)}\n\nRequest: {question}\n\n"
        "Reply with only the function call(s) that fulfil the request, as a JSON list: "
        '[{"name": "<function name>", "arguments": {"<parameter>": <value>}}].'
    )


@builder("bfcl.subset")
def bfcl(sources: Path, config: OfficialConfig) -> list[Row]:
    """BFCL v4 single-turn AST categories (simple Python, multiple, parallel, parallel multiple)."""
    items = []
    for category in BFCL_CATEGORIES:
        questions = read_jsonl(sources / "bfcl" / f"BFCL_v4_{category}.json")
        answers = {a["id"]: a["ground_truth"] for a in read_jsonl(sources / "bfcl" / "possible_answer" / f"BFCL_v4_{category}.json")}
        for item in questions:
            turns = item["question"][0]
            question = "\n".join(str(m["content"]) for m in turns if m.get("role") == "user")
            items.append({
                "id": f"bfcl-{item['id']}",
                "prompt": _bfcl_prompt(question, item["function"]),
                "formatted_prompt": question,
                "gold": answers[item["id"]],
                "meta": {"category": category},
                "tool_spec": item["function"],
            })
    return sample(items, config.size, config.seed)


@builder("mtbench.turn1")
def mtbench_turn1(sources: Path, config: OfficialConfig) -> list[Row]:
    """MT-Bench first turns: open requests whose default length and formatting are measured."""
    return [
        {
            "id": f"mtbench-{item['question_id']}-turn1",
            "prompt": item["turns"][0],
            "formatted_prompt": item["turns"][0],
            "meta": {"category": item["category"], "question_id": item["question_id"]},
        }
        for item in read_jsonl(sources / "mt_bench" / "question.jsonl")
    ]


@builder("mtbench.turn2")
def mtbench_turn2(sources: Path, config: OfficialConfig) -> list[Row]:
    """MT-Bench second turns after GPT-4's reference first answer (the 30 questions that have one)."""
    references = {r["question_id"]: r["choices"][0]["turns"] for r in read_jsonl(sources / "mt_bench" / "reference_answer" / "gpt-4.jsonl")}
    rows = []
    for item in read_jsonl(sources / "mt_bench" / "question.jsonl"):
        reference = references.get(item["question_id"])
        if not reference:
            continue
        first, second = item["turns"]
        transcript = (
            "This is a conversation so far, followed by the user's next message. Reply to that message.\n\n"
            f"User: {first}\n\nAssistant: {reference[0]}\n\nUser: {second}"
        )
        rows.append({
            "id": f"mtbench-{item['question_id']}-turn2",
            "prompt": transcript,
            "formatted_prompt": f"{transcript}\n\nAssistant:",
            "ctx": json.dumps([{"role": "user", "content": first}, {"role": "assistant", "content": reference[0]}]),
            "gold": reference[1] if len(reference) > 1 else "",
            "meta": {"category": item["category"], "question_id": item["question_id"], "first_turn_from": "gpt-4 reference"},
        })
    return rows


@builder("oasst1.full")
def oasst1(sources: Path, config: OfficialConfig) -> list[Row]:
    """OASST1 English conversation starters (the first prompt of each of 100 message trees)."""
    rows = []
    for tree in read_jsonl(sources / "oasst" / "en_100_tree.jsonl"):
        prompt = tree["prompt"]
        rows.append({
            "id": f"oasst1-{tree['message_tree_id']}",
            "prompt": prompt["text"],
            "formatted_prompt": prompt["text"],
            "meta": {"lang": prompt.get("lang"), "message_id": prompt["message_id"]},
        })
    return rows
