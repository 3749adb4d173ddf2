"""Full-parameter supervised fine-tuning (TRL SFTTrainer, completion-only loss) on chat rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from captrack.training.harness import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_LEARNING_RATE,
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

__all__ = ["train_config", "train_sft"]


def train_config(
    base_dir: Path,
    rows: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
    bf16: bool = False,
) -> dict[str, Any]:
    """Return the JSON-able training config (with `config_hash`) that keys the output cache."""
    return hashed_config(
        base_dir,
        rows,
        "full-sft-completion-only",
        steps=steps,
        seed=seed,
        learning_rate=learning_rate,
        batch_size=batch_size,
        max_length=max_length,
        bf16=bf16,
    )


def train_sft(
    base_dir: Path,
    out_dir: Path,
    rows: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
    bf16: bool = False,
    callbacks: Sequence[CallbackFactory] = (),
    save_steps: int | None = None,
) -> dict[str, Any]:
    """Full-parameter SFT of `base_dir` on chat `rows` with TRL on CPU; save atomically to `out_dir`."""
    check_inputs(rows, steps)
    config = with_checkpoints(train_config(base_dir, rows, steps, seed, learning_rate, batch_size, max_length, bf16), save_steps)
    examples = [_prompt_completion(row) for row in rows]

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import SFTConfig, SFTTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        dataset = datasets.Dataset.from_list(examples)
        args = SFTConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size, bf16),
            max_length=max_length,
            completion_only_loss=True,
            packing=False,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
        record = fit_and_save(trainer, tokenizer, tmp, [*callbacks, *checkpoint_saver(tmp, tokenizer, save_steps)])
        losses = [float(e["loss"]) for e in record["log_history"] if "loss" in e]
        return {
            "steps": record["steps"],
            "loss_first": losses[0] if losses else math.nan,
            "loss_last": losses[-1] if losses else math.nan,
            "losses": losses,
            "tokens_seen": last_logged(record["log_history"], "num_tokens"),
            "train_seconds": record["train_seconds"],
            "train_cpu_seconds": record["train_cpu_seconds"],
            "weight_change": record["weight_change"],
        }

    return train_cached(Path(out_dir), config, run)


def _prompt_completion(row: dict[str, Any]) -> dict[str, Any]:
    """Split a chat row into conversational prompt/completion so TRL masks the loss to the final reply."""
    messages = row["messages"]
    if not messages or messages[-1]["role"] != "assistant":
        raise ValueError("each row's messages must end with an assistant turn")
    return {"prompt": messages[:-1], "completion": messages[-1:]}
