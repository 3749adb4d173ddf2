"""Knowledge and comprehension: MMLU-Pro (four forms), TruthfulQA, HellaSwag, WinoGrande, BoolQ, HotpotQA."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from captrack.official.configs import OfficialConfig
from captrack.official.sources import builder, letters, read_json, read_jsonl, sample
from captrack.official.sources.adapt import (
    mc_schema,
    mc_table_schema,
    permute_options,
    schema_prompt,
)

Row = dict[str, Any]
_MC_INSTRUCTION = (
    "Answer the following multiple choice question. Think it through, then give the letter of the "
    "correct option on the last line as 'Answer: <letter>'."
)


def _options_block(options: list[str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip(letters(len(options)), options, strict=True))


def _mmlu_pro_gold(item: dict[str, Any], form: str) -> int:
    """The gold option index; `full` trusts the gold letter, which MMLU-Pro scores against (qid 3983's index is off)."""
    if form != "full":
        return int(item["answer_index"])
    index = ord(str(item["answer"]).strip().upper()) - ord("A")
    if not 0 <= index < len(item["options"]):
        raise ValueError(f"mmlu_pro/test.jsonl question_id {item['question_id']}: answer {item['answer']!r} names no option")
    return index


@builder("mmlu_pro.full", "mmlu_pro.subset", "mmlu_pro.rephrased", "mmlu_pro.schema", "mmlu_pro.table_schema")
def mmlu_pro(sources: Path, config: OfficialConfig) -> list[Row]:
    """MMLU-Pro test questions (up to ten options); every sampled form draws the same sample, `full` all 12,032."""
    form = config.name.split(".")[1]
    rows = []
    for item in sample(read_jsonl(sources / "mmlu_pro" / "test.jsonl"), config.size, config.seed):
        options, gold = [str(o) for o in item["options"]], _mmlu_pro_gold(item, form)
        meta: dict[str, Any] = {"question_id": item["question_id"], "category": item.get("category"), "form": form}
        if form == "full":
            meta["src"] = item.get("src")
        question = item["question"].strip()
        schema: dict[str, Any] | None = None
        if form == "rephrased":
            options, gold, order = permute_options(options, gold, f"{config.seed}-{item['question_id']}")
            meta["option_order"] = order
            prompt = (
                f"Here are the possible answers:\n{_options_block(options)}\n\nWhich one is right? {question}\n\n"
                "Explain briefly and end with a line 'Answer: <letter>'."
            )
        else:
            task = f"Question: {question}\n{_options_block(options)}"
            if form in ("subset", "full"):
                prompt = f"{_MC_INSTRUCTION}\n\n{task}"
            else:
                labels = letters(len(options))
                schema = mc_schema(labels) if form == "schema" else mc_table_schema(labels)
                prompt = schema_prompt(f"Answer this multiple choice question.\n\n{task}", schema, table=form == "table_schema")
        meta |= {"answer_path": "answer", "answer_kind": "letter"}
        rows.append({
            "id": f"mmlu_pro-{item['question_id']}",
            "prompt": prompt,
            "formatted_prompt": f"Question: {question}\n{_options_block(options)}\nAnswer:",
            "choices": options,
            "gold": letters(len(options))[gold],
            "meta": meta,
            "schema": schema,
        })
    return rows


@builder("truthfulqa.full")
def truthfulqa(sources: Path, config: OfficialConfig) -> list[Row]:
    """TruthfulQA MC1: one true answer among the options (scored by option likelihood)."""
    rows = []
    for i, item in enumerate(read_json(sources / "truthfulqa" / "mc_task.json")):
        options = list(item["mc1_targets"])
        gold = [item["mc1_targets"][o] for o in options].index(1)
        rows.append({
            "id": f"truthfulqa-{i}",
            "prompt": f"Q: {item['question']}",
            "formatted_prompt": f"Q: {item['question']}\nA:",
            "choices": options,
            "gold": str(gold),
        })
    return sample(rows, config.size, config.seed)


def _hellaswag_clean(text: str) -> str:
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


@builder("hellaswag.subset")
def hellaswag(sources: Path, config: OfficialConfig) -> list[Row]:
    """HellaSwag validation (the 1000-row original-schema copy), cleaned as lm-eval's hellaswag task does."""
    rows = []
    for item in sample(read_jsonl(sources / "hellaswag" / "hellaswag_val_subset1000.jsonl"), config.size, config.seed):
        ctx = f"{item['ctx_a']} {item['ctx_b'].capitalize()}"
        query = _hellaswag_clean(f"{item['activity_label']}: {ctx}")
        rows.append({
            "id": f"hellaswag-{item['ind']}",
            "prompt": query,
            "formatted_prompt": query,
            "ctx": ctx,
            "choices": [_hellaswag_clean(e) for e in item["endings"]],
            "gold": str(int(item["label"])),
            "meta": {"activity_label": item["activity_label"], "source_id": item.get("source_id")},
        })
    return rows


@builder("winogrande.subset")
def winogrande(sources: Path, config: OfficialConfig) -> list[Row]:
    """WinoGrande 1.1 dev: which of two names fills the blank."""
    rows = []
    for item in sample(read_jsonl(sources / "winogrande" / "dev.jsonl"), config.size, config.seed):
        sentence = item["sentence"]
        question = f"{sentence}\nWho or what does the blank (_) stand for, {item['option1']} or {item['option2']}?"
        rows.append({
            "id": f"winogrande-{item['qID']}",
            "prompt": question,
            "formatted_prompt": f"{question}\nAnswer:",
            "choices": [item["option1"], item["option2"]],
            "gold": str(int(item["answer"]) - 1),
        })
    return rows


@builder("boolq.subset")
def boolq(sources: Path, config: OfficialConfig) -> list[Row]:
    """BoolQ dev: a yes/no answer from a passage, with the sentence that supports it quoted."""
    rows = []
    items = read_jsonl(sources / "boolq" / "dev.jsonl")
    for i, item in sample(list(enumerate(items)), config.size, config.seed):
        question = item["question"].strip().rstrip("?") + "?"
        rows.append({
            "id": f"boolq-dev-{i}",
            "prompt": (
                "Read the passage and answer the question with yes or no. Then, on a new line starting with "
                f"'Evidence:', quote the sentence of the passage that supports your answer.\n\n"
                f"Passage ({item['title']}): {item['passage']}\n\nQuestion: {question}"
            ),
            "formatted_prompt": f"{item['passage']}\nQuestion: {question}\nAnswer:",
            "ctx": item["passage"],
            "choices": ["no", "yes"],
            "gold": "yes" if item["answer"] else "no",
            "meta": {"title": item["title"]},
        })
    return rows


def _field(value: Any) -> Any:
    return ast.literal_eval(value) if isinstance(value, str) else value


def _hotpot_items(sources: Path, config: OfficialConfig) -> list[dict[str, Any]]:
    folder = sources / "hotpotqa"
    items = read_jsonl(folder / "hotpot_distractor_val_sample500.jsonl")
    items += read_jsonl(folder / "hotpot_distractor_val_sample300.jsonl")
    for item in items:
        item["context"] = _field(item["context"])
        item["supporting_facts"] = _field(item["supporting_facts"])
    return sample(items, config.size, config.seed)


def _paragraphs(item: dict[str, Any]) -> list[tuple[str, str]]:
    context = item["context"]
    pairs: Iterable[tuple[Any, Any]]
    if isinstance(context, dict):
        pairs = zip(context["title"], context["sentences"], strict=True)
    else:
        pairs = ((title, sentences) for title, sentences in context)
    return [(str(title), "".join(sentences).strip()) for title, sentences in pairs]


def _support_titles(item: dict[str, Any]) -> list[str]:
    facts = item["supporting_facts"]
    titles = facts["title"] if isinstance(facts, dict) else [title for title, _ in facts]
    return list(dict.fromkeys(str(t) for t in titles))


@builder("hotpotqa.subset")
def hotpotqa(sources: Path, config: OfficialConfig) -> list[Row]:
    """HotpotQA distractor validation: a short answer plus the titles of the paragraphs used."""
    rows = []
    for item in _hotpot_items(sources, config):
        paragraphs = _paragraphs(item)
        ctx = "\n\n".join(f"Title: {title}\n{body}" for title, body in paragraphs)
        rows.append({
            "id": f"hotpotqa-{item['id']}",
            "prompt": (
                "Answer the question using the paragraphs below. Give the short answer on the first line as "
                "'Answer: <answer>', then a line 'Evidence: ' with the titles of the paragraphs you used, "
                f"separated by semicolons.\n\n{ctx}\n\nQuestion: {item['question']}"
            ),
            "formatted_prompt": f"{ctx}\n\nQuestion: {item['question']}\nAnswer:",
            "ctx": ctx,
            "gold": item["answer"],
            "meta": {"supporting_titles": _support_titles(item), "titles": [t for t, _ in paragraphs],
                     "type": item.get("type"), "level": item.get("level")},
        })
    return rows


@builder("hotpotqa.citation")
def hotpotqa_citation(sources: Path, config: OfficialConfig) -> list[Row]:
    """HotpotQA with numbered paragraphs: answer and cite the supporting ones as [n]."""
    rows = []
    for item in _hotpot_items(sources, config):
        paragraphs = _paragraphs(item)
        support = _support_titles(item)
        ctx = "\n\n".join(f"[{i}] {title}: {body}" for i, (title, body) in enumerate(paragraphs, start=1))
        rows.append({
            "id": f"hotpotqa-citation-{item['id']}",
            "prompt": (
                "Answer the question in one or two sentences using the numbered sources below. Cite the "
                "sources that support each statement with their numbers in square brackets, like [2] or "
                f"[1, 4], and cite nothing else.\n\n{ctx}\n\nQuestion: {item['question']}"
            ),
            "formatted_prompt": f"{ctx}\n\nQuestion: {item['question']}\nAnswer:",
            "ctx": ctx,
            "gold": item["answer"],
            "meta": {"n_sources": len(paragraphs),
                     "support": [i for i, (title, _) in enumerate(paragraphs, start=1) if title in support]},
        })
    return rows
