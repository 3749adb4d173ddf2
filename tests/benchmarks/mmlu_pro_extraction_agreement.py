"""captrack's option-letter extraction against MMLU-Pro's own, item by item, on real model outputs.

    python tests/benchmarks/mmlu_pro_extraction_agreement.py [--samples CLASS --n 5 --model NAME]

Reads the six MMLU-Pro result files (5-shot chain of thought, greedy) in
``$CAPTRACK_SHARED/data/mmlu_pro_outputs`` (default /work/shared; see data/SOURCES.md there). Each
item holds the model's ``generated_text`` and ``pred``, the letter MMLU-Pro's extractor read from it.
For every item it runs captrack's ``mc_letter`` scorer's extraction on ``generated_text`` and prints,
per model: n, agree, disagree, the count of each disagreement class, and the accuracy each side
gives. MMLU-Pro's extractor is not ground truth: ``--samples CLASS`` prints items of one class so
that a person can judge which side read the response right (tasks/mmlu_pro/README.md lists the verdicts).

MMLU-Pro's "no answer": ``pred`` is null in the Mistral files (their extractor reads only the first
"answer is (X)"); the Llama files (its newer extractor, with fallbacks to "Answer: X" and to the last
standalone capital A-J) write a constant 'G' instead, so a 'G' there counts as no answer when none of
those three readings finds a letter in the text. Both accuracies count no answer as wrong.
It prints figures; it asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from captrack.metrics import extract  # noqa: E402

MODELS = (
    "Meta-Llama-3_1-8B", "Meta-Llama-3_1-8B-Instruct",
    "Mistral-7B-v0.1", "Mistral-7B-Instruct-v0.1",
    "Mistral-7B-v0.2-hf", "Mistral-7B-Instruct-v0.2",
)
CLASSES = ("captrack none / mmlu-pro letter", "captrack letter / mmlu-pro none", "both letters, different")
_MMLU_PRO_MARKED = re.compile(r"answer is \(?[A-J]")
_MMLU_PRO_LINE = re.compile(r"[aA]nswer:\s*[A-J]")
_MMLU_PRO_STANDALONE = re.compile(r"\b[A-J]\b")


def outputs_folder() -> Path:
    """The folder of the MMLU-Pro result zips under $CAPTRACK_SHARED (default /work/shared)."""
    return Path(os.environ.get("CAPTRACK_SHARED", "/work/shared")) / "data" / "mmlu_pro_outputs"


def load(model: str) -> list[dict[str, Any]]:
    """The items of one model's result file."""
    path = outputs_folder() / f"model_outputs_{model}_5shots.zip"
    with zipfile.ZipFile(path) as archive:
        items: list[dict[str, Any]] = json.loads(archive.read(archive.namelist()[0]))
    return items


def mmlu_pro_letter(item: dict[str, Any]) -> str | None:
    """MMLU-Pro's extracted letter, None where its extractor found none (null, or the 'G' placeholder)."""
    pred = item["pred"]
    if pred != "G":
        return str(pred) if pred else None
    text = str(item["generated_text"])
    found = _MMLU_PRO_MARKED.search(text) or _MMLU_PRO_LINE.search(text) or _MMLU_PRO_STANDALONE.search(text)
    return "G" if found else None


def captrack_reading(item: dict[str, Any]) -> tuple[str | None, str]:
    """The letter captrack's ``mc_letter`` scorer reads from the item's response, and how."""
    labels = [chr(ord("A") + i) for i in range(len(item["options"]))]
    return extract.letter_reading(str(item["generated_text"]), labels, [str(o) for o in item["options"]])


def classify(ours: str | None, theirs: str | None) -> str:
    """'agree' or one of CLASSES."""
    if ours == theirs:
        return "agree"
    if ours is None:
        return CLASSES[0]
    if theirs is None:
        return CLASSES[1]
    return CLASSES[2]


def rows(model: str) -> Iterator[tuple[dict[str, Any], str | None, str | None, str, str]]:
    """(item, captrack's letter, MMLU-Pro's letter, class, how captrack read it) for every item of a model."""
    for item in load(model):
        (ours, how), theirs = captrack_reading(item), mmlu_pro_letter(item)
        yield item, ours, theirs, classify(ours, theirs), how


def table() -> None:
    """Print the per-model agreement table, then the disagreements by how captrack read them (Markdown)."""
    print("| model | n | agree | disagree | " + " | ".join(CLASSES) + " | captrack acc | MMLU-Pro acc |")
    print("|---" * (6 + len(CLASSES)) + "|")
    detail: dict[str, collections.Counter[tuple[str, str]]] = {}
    for model in MODELS:
        counts: collections.Counter[str] = collections.Counter()
        detail[model] = collections.Counter()
        right = {"captrack": 0, "mmlu-pro": 0}
        n = 0
        for item, ours, theirs, kind, how in rows(model):
            n += 1
            counts[kind] += 1
            if kind != "agree":
                detail[model][kind, how] += 1
            right["captrack"] += ours == item["answer"]
            right["mmlu-pro"] += theirs == item["answer"]
        cells = [str(counts[c]) for c in CLASSES]
        print(
            f"| {model} | {n} | {counts['agree']} | {n - counts['agree']} | {' | '.join(cells)} "
            f"| {right['captrack'] / n:.4f} | {right['mmlu-pro'] / n:.4f} |"
        )
    print("\n| disagreement class | captrack's reading | " + " | ".join(MODELS) + " |")
    print("|---" * (2 + len(MODELS)) + "|")
    for kind, how in sorted({key for counter in detail.values() for key in counter}):
        print(f"| {kind} | {how} | " + " | ".join(str(detail[m][kind, how]) for m in MODELS) + " |")


def samples(kind: str, n: int, model: str | None) -> None:
    """Print `n` items of one disagreement class (the end of each response, where the answer is)."""
    shown = 0
    for name in [model] if model else MODELS:
        for item, ours, theirs, found, how in rows(name):
            if found != kind or shown >= n:
                continue
            shown += 1
            print(f"--- {name} qid={item['question_id']} gold={item['answer']} captrack={ours} ({how}) mmlu-pro={theirs}")
            print(str(item["generated_text"])[-700:].strip())


def main() -> None:
    """Print the agreement table, or samples of one disagreement class."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", choices=CLASSES, help="print items of this disagreement class instead")
    parser.add_argument("--n", type=int, default=5, help="how many items --samples prints")
    parser.add_argument("--model", choices=MODELS, help="only this model's items for --samples")
    args = parser.parse_args()
    if not outputs_folder().is_dir():
        print(f"skipped: no MMLU-Pro outputs at {outputs_folder()} (set CAPTRACK_SHARED to the shared folder)")
        return
    if args.samples:
        samples(args.samples, args.n, args.model)
    else:
        table()


if __name__ == "__main__":
    main()
