"""Preference (DPO) and RL (GRPO) counterparts of captrack's SFT run, on the same arithmetic problems."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Any

from captrack.training import (
    DEFAULT_MAX_LENGTH,
    arithmetic_problems,
    check_inputs,
    fit_and_save,
    format_solution,
    hashed_config,
    last_logged,
    load_base,
    train_cached,
    trainer_args,
)

__all__ = [
    "DEFAULT_DPO_BATCH_SIZE",
    "DEFAULT_DPO_BETA",
    "DEFAULT_DPO_LEARNING_RATE",
    "DEFAULT_MAX_COMPLETION_LENGTH",
    "DEFAULT_NUM_GENERATIONS",
    "DEFAULT_RL_BATCH_SIZE",
    "DEFAULT_RL_LEARNING_RATE",
    "DEFAULT_TEMPERATURE",
    "EQUAL_BUDGET_STEPS",
    "arithmetic_accuracy",
    "arithmetic_preference_rows",
    "arithmetic_prompt_rows",
    "correctness_reward",
    "final_answer",
    "format_reward",
    "step_reward",
    "train_dpo",
    "train_rl",
]

EQUAL_BUDGET_STEPS = 24
"""Optimizer steps for an equal-budget SFT/DPO/RL comparison: ~1.5-4 min each on 2 shared CPU cores."""
DEFAULT_DPO_LEARNING_RATE = 1e-5
DEFAULT_DPO_BATCH_SIZE = 1
"""Pairs per step: a chosen and a rejected sequence, as many sequences as an SFT step of 2."""
DEFAULT_DPO_BETA = 0.1
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

_EQUATION = re.compile(r"(\d+(?: [-+*/] \d+)+) = (\d+)")
_MARKED = re.compile(r"####\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
_ANSWER_LINE = re.compile(r"^####\s*-?\d+\s*$", re.MULTILINE)
_SLIPS = (-10, -2, -1, 1, 2, 10)


def arithmetic_preference_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Conversational prompt/chosen/rejected rows: the SFT problems, correct vs a plausible wrong solution."""
    rng = random.Random(f"captrack-preference-{seed}")
    rows: list[dict[str, Any]] = []
    for question, steps, answer in arithmetic_problems(n, seed):
        wrong_steps, wrong = _wrong_solution(steps, answer, rng)
        rows.append(
            {
                "prompt": [{"role": "user", "content": question}],
                "chosen": [{"role": "assistant", "content": format_solution(steps, answer)}],
                "rejected": [{"role": "assistant", "content": format_solution(wrong_steps, wrong)}],
            }
        )
    return rows


def arithmetic_prompt_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Conversational prompt rows with the gold `answer`, for RL with a verifiable reward (same problems as SFT)."""
    return [
        {"prompt": [{"role": "user", "content": question}], "answer": answer}
        for question, _, answer in arithmetic_problems(n, seed)
    ]


def _wrong_solution(steps: list[str], answer: int, rng: random.Random) -> tuple[list[str], int]:
    """A wrong worked solution: one step stopped short (a third of the time) or an arithmetic slip carried forward."""
    if rng.random() < 1 / 3 and len(steps) > 1:
        short = steps[:-1]
        previous = int(_equation(short[-1]).group(2))
        if previous != answer:
            return short, previous
    for _ in range(20):
        slipped = _slip(steps, rng.randrange(len(steps)), rng.choice(_SLIPS))
        if slipped is not None and slipped[1] != answer:
            return slipped
    slipped = _slip(steps, len(steps) - 1, 1)  # always valid: the last result plus one
    assert slipped is not None
    return slipped


def _slip(steps: list[str], index: int, delta: int) -> tuple[list[str], int] | None:
    """Add `delta` to step `index`'s result and recompute later steps from it; None if a value turns invalid."""
    new_steps = list(steps[:index])
    replaced: dict[int, int] = {}
    value = 0
    for position, step in enumerate(steps[index:], start=index):
        match = _equation(step)
        tokens = match.group(1).split(" ")
        operands = [str(replaced.get(int(t), int(t))) for t in tokens[::2]]
        tokens[::2] = operands
        computed = _evaluate(tokens)
        if computed is None:
            return None
        value = computed + delta if position == index else computed
        if value < 0:
            return None
        replaced[int(match.group(2))] = value
        new_steps.append(f"{step[: match.start()]}{' '.join(tokens)} = {value}{step[match.end():]}")
    return new_steps, value


def _equation(step: str) -> re.Match[str]:
    """The `a op b ... = c` equation in a generated solution step."""
    match = _EQUATION.search(step)
    if match is None:
        raise ValueError(f"no equation in step {step!r}")
    return match


def _evaluate(tokens: list[str]) -> int | None:
    """Evaluate `a op b op c ...` left to right; None for an inexact division."""
    value = int(tokens[0])
    for op, text in zip(tokens[1::2], tokens[2::2], strict=True):
        operand = int(text)
        if op == "+":
            value += operand
        elif op == "-":
            value -= operand
        elif op == "*":
            value *= operand
        elif operand == 0 or value % operand:
            return None
        else:
            value //= operand
    return value


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
        equations = [(m.group(1).split(), int(m.group(2))) for m in _EQUATION.finditer(_completion_text(completion))]
        checked = [_evaluate(tokens) == result for tokens, result in equations
                   if len(tokens) == 3 or set(tokens[1::2]) <= {"+", "-"}]
        rewards.append(STEP_BONUS * sum(checked) / len(checked) if checked else 0.0)
    return rewards


def format_reward(completions: list[Any], **_: Any) -> list[float]:
    """A small bonus where the completion has a `#### <integer>` answer line."""
    return [FORMAT_BONUS if _ANSWER_LINE.search(_completion_text(c)) else 0.0 for c in completions]


def train_dpo(
    base_dir: Path,
    out_dir: Path,
    rows: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_DPO_LEARNING_RATE,
    batch_size: int = DEFAULT_DPO_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
    beta: float = DEFAULT_DPO_BETA,
) -> dict[str, Any]:
    """Full-parameter DPO (sigmoid loss, reference = frozen base) of `base_dir` on preference `rows`, cached."""
    check_inputs(rows, steps)
    for row in rows:
        if not {"prompt", "chosen", "rejected"} <= row.keys():
            raise ValueError("each preference row needs 'prompt', 'chosen' and 'rejected'")
    config = hashed_config(
        base_dir, rows, "full-dpo-sigmoid", steps=steps, seed=seed, learning_rate=learning_rate,
        batch_size=batch_size, max_length=max_length, beta=beta,
    )

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import DPOConfig, DPOTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        _, reference = load_base(Path(base_dir), seed)
        args = DPOConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size),
            max_length=max_length,
            beta=beta,
            loss_type=["sigmoid"],
        )
        trainer = DPOTrainer(
            model=model,
            ref_model=reference,
            args=args,
            train_dataset=datasets.Dataset.from_list(rows),
            processing_class=tokenizer,
        )
        fit = fit_and_save(trainer, tokenizer, tmp)
        history = [e for e in fit["log_history"] if "loss" in e and "rewards/margins" in e]
        losses = [float(e["loss"]) for e in history]
        margins = [float(e["rewards/margins"]) for e in history]
        return {
            "steps": fit["steps"],
            "loss_first": losses[0] if losses else math.nan,
            "loss_last": losses[-1] if losses else math.nan,
            "losses": losses,
            "margin_first": margins[0] if margins else math.nan,
            "margin_last": margins[-1] if margins else math.nan,
            "reward_margins": margins,
            "reward_accuracies": [float(e["rewards/accuracies"]) for e in history],
            "rewards_chosen": [float(e["rewards/chosen"]) for e in history],
            "rewards_rejected": [float(e["rewards/rejected"]) for e in history],
            "tokens_seen": last_logged(fit["log_history"], "num_tokens"),
            "train_seconds": fit["train_seconds"],
            "train_cpu_seconds": fit["train_cpu_seconds"],
            "weight_change": fit["weight_change"],
        }

    return train_cached(Path(out_dir), config, run)


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
) -> dict[str, Any]:
    """Full-parameter GRPO of `base_dir` on `prompts` ({prompt, answer}) with a verifiable answer reward, cached.

    `batch_size` counts prompts per optimizer step (as SFT and DPO count examples); each prompt gets
    `num_generations` sampled completions. `beta` > 0 adds a KL penalty to the frozen base.
    """
    check_inputs(prompts, steps)
    for row in prompts:
        if not {"prompt", "answer"} <= row.keys():
            raise ValueError("each RL prompt row needs 'prompt' and 'answer'")
    if num_generations < 2:
        raise ValueError(f"num_generations must be >= 2 for group-relative advantages, got {num_generations}")
    config = hashed_config(
        base_dir, prompts, "full-grpo-answer-reward", steps=steps, seed=seed, learning_rate=learning_rate,
        batch_size=batch_size, num_generations=num_generations, max_completion_length=max_completion_length,
        beta=beta, temperature=temperature, format_bonus=FORMAT_BONUS, step_bonus=STEP_BONUS,
    )

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import GRPOConfig, GRPOTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        args = GRPOConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size * num_generations),
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
        fit = fit_and_save(trainer, tokenizer, tmp)
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

    return train_cached(Path(out_dir), config, run)



def arithmetic_accuracy(
    model_dir: Path, n: int = 20, seed: int = 1000, max_new_tokens: int = 160, batch_size: int = 10
) -> dict[str, Any]:
    """Greedy-decode `n` held-out arithmetic problems with the model in `model_dir`; score final answers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, local_files_only=True).eval()
    rows = arithmetic_prompt_rows(n, seed)
    completions: list[str] = []
    for start in range(0, n, batch_size):
        batch = rows[start : start + batch_size]
        texts = [tokenizer.apply_chat_template(r["prompt"], tokenize=False, add_generation_prompt=True) for r in batch]
        inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        with torch.inference_mode():
            output = model.generate(
                **inputs, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=tokenizer.pad_token_id
            )
        new = output[:, inputs["input_ids"].shape[1] :]
        completions.extend(tokenizer.batch_decode(new, skip_special_tokens=True))
    correct = correctness_reward(completions, [r["answer"] for r in rows])
    formatted = [c > 0 for c in format_reward(completions)]
    return {
        "n": n,
        "accuracy": sum(correct) / n if n else math.nan,
        "formatted": sum(formatted) / n if n else math.nan,
        "completions": completions,
    }
