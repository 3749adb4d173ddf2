"""Split a logged prompt into what a reader wants first (the question) and what can stay folded.

lm-eval logs the prompt the model saw: with ``--apply_chat_template`` that is the chat template's
text (a system message such as "You are a helpful AI assistant named SmolLM ...", role markers), and
for few-shot tasks the worked examples before the question. A drill-down page shows the last user
turn (or the last question of a few-shot prompt) and folds the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FoldedPrompt", "fold_prompt"]

# (start of the last user turn's content, end of it) for the chat templates lm-eval's hf backend renders.
_USER_TURNS = (
    re.compile(r"<\|im_start\|>user\n(?P<q>.*?)(?:<\|im_end\|>|\Z)", re.S),                     # ChatML (SmolLM2, Qwen)
    re.compile(r"<start_of_turn>user\n(?P<q>.*?)(?:<end_of_turn>|\Z)", re.S),                     # Gemma
    re.compile(r"<\|start_header_id\|>user<\|end_header_id\|>\n\n(?P<q>.*?)(?:<\|eot_id\|>|\Z)", re.S),  # Llama 3
    re.compile(r"\[INST\](?P<q>.*?)(?:\[/INST\]|\Z)", re.S),                                       # Mistral / Llama 2
)
_FEW_SHOT = re.compile(r"(?:^|\n)(?=(?:Question|Q|Problem):)")


@dataclass(frozen=True)
class FoldedPrompt:
    """The question shown first, and the rest of the prompt (template, system text, examples) to fold."""

    question: str
    folded: str


def fold_prompt(prompt: str) -> FoldedPrompt:
    """The last user turn of a chat-template prompt, or the last question of a few-shot prompt, and the rest."""
    for pattern in _USER_TURNS:
        turns = list(pattern.finditer(prompt))
        if turns:
            last = turns[-1]
            rest = (prompt[: last.start("q")] + "\u2026" + prompt[last.end("q"):]).strip()
            return FoldedPrompt(last.group("q").strip(), rest)
    starts = [m.end() for m in _FEW_SHOT.finditer(prompt)]
    if len(starts) > 1 and starts[-1] > 0:
        cut = starts[-1]
        return FoldedPrompt(prompt[cut:].strip(), prompt[:cut].strip())
    return FoldedPrompt(prompt.strip(), "")
