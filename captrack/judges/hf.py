"""A judge run in-process with transformers: any local causal LM folder, GGUF file or captrack model alias."""

from __future__ import annotations

import threading
from typing import Any

from captrack.judges.base import Judge, JudgeError, JudgeOptions, Message, judge_backend

__all__ = ["HFJudge"]


class HFJudge(Judge):
    """Greedy generation on CPU (or the first GPU), one request at a time; the model loads on first use."""

    def __init__(self, spec: str, options: JudgeOptions) -> None:
        from captrack.models import resolve_model

        self.path = resolve_model(spec)
        self.options = options
        self.id = f"hf:{spec}"
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    @property
    def concurrency(self) -> int:
        """One in-process model: requests run one after another."""
        return 1

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(self.path)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        model: Any = AutoModelForCausalLM.from_pretrained(self.path)
        self._model = model.to(device).eval()

    def attempt(self, messages: list[Message]) -> str:
        """Generate at most ``options.max_tokens`` tokens after the chat-formatted prompt."""
        import torch

        with self._lock:
            if self._model is None:
                self._load()
            tokenizer, model = self._tokenizer, self._model
            if tokenizer.chat_template:
                text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            else:
                text = "\n\n".join(m["content"] for m in messages) + "\n\nVerdict:"
            inputs = tokenizer(text, return_tensors="pt", add_special_tokens=not tokenizer.chat_template).to(model.device)
            try:
                with torch.inference_mode():
                    output = model.generate(**inputs, max_new_tokens=self.options.max_tokens, do_sample=False,
                                            pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id)
            except (RuntimeError, ValueError) as exc:  # e.g. the prompt is longer than the model's context
                raise JudgeError("generation_failed", f"{type(exc).__name__}: {exc}") from exc
            return str(tokenizer.decode(output[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True))

    def close(self) -> None:
        """Drop the model."""
        self._model = self._tokenizer = None


@judge_backend("hf")
def _hf(name: str, options: JudgeOptions) -> Judge:
    return HFJudge(name, options)
