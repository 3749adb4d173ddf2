"""Preference optimisation (TRL DPOTrainer) on right vs slipped solutions of the same problems."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captrack.training.harness import (
    DEFAULT_MAX_LENGTH,
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

__all__ = [
    "DEFAULT_DPO_BATCH_SIZE",
    "DEFAULT_DPO_BETA",
    "DEFAULT_DPO_LEARNING_RATE",
    "EQUAL_BUDGET_STEPS",
    "train_dpo",
]


EQUAL_BUDGET_STEPS = 24
"""Optimizer steps for an equal-budget SFT/DPO/RL comparison: ~1.5-4 min each on 2 shared CPU cores."""


DEFAULT_DPO_LEARNING_RATE = 1e-5


DEFAULT_DPO_BATCH_SIZE = 1
"""Pairs per step: a chosen and a rejected sequence, as many sequences as an SFT step of 2."""


DEFAULT_DPO_BETA = 0.1


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
    bf16: bool = False,
    callbacks: Sequence[CallbackFactory] = (),
    save_steps: int | None = None,
) -> dict[str, Any]:
    """Full-parameter DPO (sigmoid loss, reference = frozen base) of `base_dir` on preference `rows`, cached."""
    check_inputs(rows, steps)
    for row in rows:
        if not {"prompt", "chosen", "rejected"} <= row.keys():
            raise ValueError("each preference row needs 'prompt', 'chosen' and 'rejected'")
    config = hashed_config(
        base_dir, rows, "full-dpo-sigmoid", steps=steps, seed=seed, learning_rate=learning_rate,
        batch_size=batch_size, max_length=max_length, beta=beta, bf16=bf16,
    )
    config = with_checkpoints(config, save_steps)

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import DPOConfig, DPOTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        _, reference = load_base(Path(base_dir), seed)
        args = DPOConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size, bf16),
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
        return _record(fit_and_save(trainer, tokenizer, tmp, [*callbacks, *checkpoint_saver(tmp, tokenizer, save_steps)]))

    return train_cached(Path(out_dir), config, run)


def _record(fit: dict[str, Any]) -> dict[str, Any]:
    """The training record of a DPO run: per-step losses, reward margins and accuracies, and costs."""
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
