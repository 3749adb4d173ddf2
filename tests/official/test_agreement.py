"""captrack's IFEval and GSM8K scoring agree with lm-eval's own on the same responses."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from official_mirror import shared_data

from captrack.metrics import score
from captrack.metrics.ifeval import (
    RANDOM_FALLBACK_SEED,
    follow_lists,
    instruction_level_accuracy,
    prompt_level_accuracy,
)

pytestmark = pytest.mark.skipif(shared_data() is None, reason="no shared data folder (../shared/data or $CAPTRACK_SHARED)")


def _jsonl(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_ifeval_accuracies_equal_lm_evals_on_gpt4_responses() -> None:
    from lm_eval.tasks.ifeval import utils as lm_ifeval

    folder = shared_data() / "ifeval"  # type: ignore[operator]
    inputs = _jsonl(folder / "input_data.jsonl")
    responses = _jsonl(folder / "input_response_data_gpt4_20231107_145030.jsonl")
    assert len(inputs) == len(responses) == 541
    ours: dict[str, list[list[bool]]] = {"strict": [], "loose": []}
    theirs: dict[str, list[list[bool]]] = {"strict": [], "loose": []}
    for item, answer in zip(inputs, responses, strict=True):  # same order; one prompt was reworded upstream
        doc = {"id": item["key"], "prompt": item["prompt"],
               "meta": json.dumps({"instruction_id_list": item["instruction_id_list"], "kwargs": item["kwargs"]})}
        strict, loose = follow_lists(doc, answer["response"])
        ours["strict"].append(strict)
        ours["loose"].append(loose)
        random.seed(RANDOM_FALLBACK_SEED)  # IFEval draws a random letter for an invalid one (2 prompts)
        reference = lm_ifeval.process_results(item, [answer["response"]])
        theirs["strict"].append(reference["inst_level_strict_acc"])
        theirs["loose"].append(reference["inst_level_loose_acc"])
    for mode in ("strict", "loose"):
        got = (prompt_level_accuracy(ours[mode]), instruction_level_accuracy(ours[mode]))
        want = (prompt_level_accuracy(theirs[mode]), lm_ifeval.agg_inst_level_acc(theirs[mode]))
        print(f"IFEval {mode}: prompt-level {got[0]:.4f} (lm-eval {want[0]:.4f}), instruction-level {got[1]:.4f} (lm-eval {want[1]:.4f})")
        assert got == want
        assert ours[mode] == theirs[mode]  # and item by item


def _flexible_extract(response: str, target: str) -> float:
    """lm-eval's gsm8k `flexible-extract` filter and exact_match settings, run through lm-eval itself."""
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from lm_eval.filters.extraction import RegexFilter

    extracted = next(iter(RegexFilter(regex_pattern=r"(-?[$0-9.,]{2,})|(-?[0-9]+)", group_select=-1).apply([[response]], [{}])))[0]
    result = exact_match_hf_evaluate(
        [extracted], [target], regexes_to_ignore=[",", "\\$", "(?s).*#### ", "\\.$"], ignore_case=True,
    )
    return float(result["exact_match"])


def test_gsm8k_extraction_agrees_with_lm_eval_flexible_extract() -> None:
    items = _jsonl(shared_data() / "gsm8k" / "test.jsonl")  # type: ignore[operator]
    forms = {
        "worked solution ending '#### N'": lambda body, n: f"{body}#### {n}",
        "ending 'The answer is N.'": lambda body, n: f"{body}The answer is {n}.",
        "ending 'Answer: N'": lambda body, n: f"{body}Answer: {n}",
    }
    for form, write in forms.items():
        differ = []
        for item in items:
            body, _, number = item["answer"].rpartition("####")
            response = write(body, number.strip())
            gold = number.strip().replace(",", "")
            ours = score("numeric_answer", {"gold": gold}, response)["exact_match"]
            if ours != _flexible_extract(response, item["answer"]):
                differ.append(response[-60:])
        print(f"GSM8K {form}: {len(items) - len(differ)}/{len(items)} agree")
        assert not differ, differ[:3]


def test_gsm8k_documented_difference_answer_line_before_more_numbers() -> None:
    response = "She sells 9 eggs at $2.\nAnswer: 18\nThat took 2 steps."
    assert score("numeric_answer", {"gold": "18"}, response)["exact_match"] == 1.0
    assert _flexible_extract(response, "#### 18") == 0.0  # flexible-extract takes the last number, 2
