"""RL with verifiable rewards (TRL GRPOTrainer): correct final answer, right steps, answer format."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captrack.training.harness import (
    CallbackFactory,
    check_inputs,
    checkpoint_saver,
    fit_and_save,
    hashed_config,
    last_logged,
    load_base,
    train_cached,
    trainer_args,
    with_checkpoints,
)
from captrack.training.problems import EQUATION, evaluate_expression

__all__ = [
    "DEFAULT_MAX_COMPLETION_LENGTH",
    "DEFAULT_NUM_GENERATIONS",
    "DEFAULT_RL_BATCH_SIZE",
    "DEFAULT_RL_LEARNING_RATE",
    "DEFAULT_TEMPERATURE",
    "correctness_reward",
    "final_answer",
    "format_reward",
    "step_reward",
    "train_rl",
]


DEFAULT_RL_LEARNING_RATE = 2e-5


DEFAULT_RL_BATCH_SIZE = 1
"""Prompts per step; times `DEFAULT_NUM_GENERATIONS` completions, as many sequences as an SFT step of 2."""


DEFAULT_NUM_GENERATIONS = 2


DEFAULT_MAX_COMPLETION_LENGTH = 64


DEFAULT_TEMPERATURE = 0.7


FORMAT_BONUS = 0.1
"""Reward for a `#### <integer>` answer line in a completion, on top of 1.0 for a correct answer."""


STEP_BONUS = 0.2
"""Reward scaled by the share of correct `a op b = c` steps: a dense, verifiable signal, so a group of
completions that all miss the final answer still gets non-zero advantages while it learns to calculate."""


_MARKED = re.compile(r"####\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)")


_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


_ANSWER_LINE = re.compile(r"^####\s*-?\d+\s*$", re.MULTILINE)


def final_answer(text: str) -> float | None:
    """The number after the last `####` in `text`, else its last number, else None."""
    candidates = _MARKED.findall(text) or _NUMBER.findall(text)
    if not candidates:
        return None
    try:
        return float(candidates[-1].replace(",", ""))
    except ValueError:
        return None


def _completion_text(completion: Any) -> str:
    """Text of a TRL completion: a string, or the last message of a conversational completion."""
    if isinstance(completion, str):
        return completion
    return str(completion[-1]["content"]) if completion else ""


def correctness_reward(completions: list[Any], answer: list[Any], **_: Any) -> list[float]:
    """1.0 where the completion's final answer (`#### N`, else its last number) equals the gold answer, else 0.0."""
    rewards = []
    for completion, gold in zip(completions, answer, strict=True):
        predicted = final_answer(_completion_text(completion))
        rewards.append(1.0 if predicted is not None and math.isclose(predicted, float(gold)) else 0.0)
    return rewards


def step_reward(completions: list[Any], **_: Any) -> list[float]:
    """`STEP_BONUS` times the share of the completion's equations that are right (0 if none).

    Checked: one operation, or a chain of + and − (where left-to-right is the true order of evaluation).
    """
    rewards = []
    for completion in completions:
        equations = [(m.group(1).split(), int(m.group(2))) for m in EQUATION.finditer(_completion_text(completion))]
        checked = [evaluate_expression(tokens) == result for tokens, result in equations
                   if len(tokens) == 3 or set(tokens[1::2]) <= {"+", "-"}]
        rewards.append(STEP_BONUS * sum(checked) / len(checked) if checked else 0.0)
    return rewards


def format_reward(completions: list[Any], **_: Any) -> list[float]:
    """A small bonus where the completion has a `#### <integer>` answer line."""
    return [FORMAT_BONUS if _ANSWER_LINE.search(_completion_text(c)) else 0.0 for c in completions]


def train_rl(
    base_dir: Path,
    out_dir: Path,
    prompts: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_RL_LEARNING_RATE,
    batch_size: int = DEFAULT_RL_BATCH_SIZE,
    num_generations: int = DEFAULT_NUM_GENERATIONS,
    max_completion_length: int = DEFAULT_MAX_COMPLETION_LENGTH,
    beta: float = 0.0,
    temperature: float = DEFAULT_TEMPERATURE,
    bf16: bool = False,
    callbacks: Sequence[CallbackFactory] = (),
    save_steps: int | None = None,
) -> dict[str, Any]:
    """Full-parameter GRPO of `base_dir` on `prompts` ({prompt, answer}) with a verifiable answer reward, cached.

    `batch_size` counts prompts per optimizer step (as SFT and DPO count examples); each prompt gets
    `num_generations` sampled completions. `beta` > 0 adds a KL penalty to the frozen base.
    """
    _check_prompts(prompts, steps, num_generations)
    config = hashed_config(
        base_dir, prompts, "full-grpo-answer-reward", steps=steps, seed=seed, learning_rate=learning_rate,
        batch_size=batch_size, num_generations=num_generations, max_completion_length=max_completion_length,
        beta=beta, temperature=temperature, format_bonus=FORMAT_BONUS, step_bonus=STEP_BONUS, bf16=bf16,
    )
    config = with_checkpoints(config, save_steps)

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import GRPOConfig, GRPOTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        args = GRPOConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size * num_generations, bf16),
            num_generations=num_generations,
            max_completion_length=max_completion_length,
            beta=beta,
            temperature=temperature,
            disable_dropout=True,
        )
        reward_funcs: list[Any] = [correctness_reward, step_reward, format_reward]  # TRL wants list[float | None]
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=datasets.Dataset.from_list(prompts),
            processing_class=tokenizer,
        )
        return _record(fit_and_save(trainer, tokenizer, tmp, [*callbacks, *checkpoint_saver(tmp, tokenizer, save_steps)]))

    return train_cached(Path(out_dir), config, run)


def _check_prompts(prompts: list[dict[str, Any]], steps: int, num_generations: int) -> None:
    """Rows need a prompt and an answer; group-relative advantages need two generations or more."""
    check_inputs(prompts, steps)
    for row in prompts:
        if not {"prompt", "answer"} <= row.keys():
            raise ValueError("each RL prompt row needs 'prompt' and 'answer'")
    if num_generations < 2:
        raise ValueError(f"num_generations must be >= 2 for group-relative advantages, got {num_generations}")


def _record(fit: dict[str, Any]) -> dict[str, Any]:
    """The training record of a GRPO run: per-step rewards, their parts, lengths, losses and costs."""
    history = [e for e in fit["log_history"] if "reward" in e]

    def series(key: str, scale: float = 1.0) -> list[float]:
        """One logged metric per step, divided by `scale`, rounded."""
        return [round(float(e[key]) / scale, 4) for e in history]

    rewards = series("reward")
    return {
        "steps": fit["steps"],
        "reward_first": rewards[0] if rewards else math.nan,
        "reward_last": rewards[-1] if rewards else math.nan,
        "rewards": rewards,
        "correct_rates": series("rewards/correctness_reward/mean"),
        "formatted_rates": series("rewards/format_reward/mean", FORMAT_BONUS),
        "correct_step_shares": series("rewards/step_reward/mean", STEP_BONUS),
        "completion_lengths": series("completions/mean_length"),
        "losses": series("loss"),
        "tokens_seen": last_logged(fit["log_history"], "num_tokens"),
        "train_seconds": fit["train_seconds"],
        "train_cpu_seconds": fit["train_cpu_seconds"],
        "weight_change": fit["weight_change"],
    }
