"""Drill-down pages show the question first and fold the chat template's preamble and few-shot examples."""

from __future__ import annotations

import pytest

from captrack.report.prompt_fold import fold_prompt

SMOL = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.parametrize(("prompt", "question", "folded_has"), [
    (SMOL, "What is the capital of France?", "You are a helpful AI assistant named SmolLM"),
    ("<bos><start_of_turn>user\nName a prime.<end_of_turn>\n<start_of_turn>model\n", "Name a prime.", "<start_of_turn>model"),
    ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>"
     "\n\n2 + 2?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", "2 + 2?", "Be brief."),
    ("Question: 1 + 1?\nAnswer: 2\n\nQuestion: 3 + 4?\nAnswer:", "Question: 3 + 4?\nAnswer:", "Question: 1 + 1?"),
    ("Is the sky green?", "Is the sky green?", ""),
])
def test_the_question_comes_first_and_the_rest_is_folded(prompt: str, question: str, folded_has: str) -> None:
    folded = fold_prompt(prompt)
    assert folded.question == question
    assert folded_has in folded.folded if folded_has else folded.folded == ""


def test_the_last_user_turn_is_the_question_of_a_multi_turn_prompt() -> None:
    two = SMOL + "Paris<|im_end|>\n<|im_start|>user\nAnd of Italy?<|im_end|>\n<|im_start|>assistant\n"
    folded = fold_prompt(two)
    assert folded.question == "And of Italy?" and "What is the capital of France?" in folded.folded
