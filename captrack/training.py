"""Narrow-domain SFT data generation and a small, cached, CPU-friendly TRL fine-tuning run."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from captrack.errors import InputError

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LEARNING_RATE",
    "DEFAULT_MAX_LENGTH",
    "RECORD_FILE",
    "Problem",
    "arithmetic_problems",
    "arithmetic_sft_rows",
    "format_solution",
    "train_config",
    "train_sft",
]

RECORD_FILE = "captrack_train.json"
"""Record written into a finished fine-tuned model directory (config, config hash, metrics)."""

DEFAULT_LEARNING_RATE = 5e-5
DEFAULT_BATCH_SIZE = 2
DEFAULT_MAX_LENGTH = 256

_NAMES = [
    "Ava", "Ben", "Chloe", "Diego", "Emma", "Farid", "Grace", "Hiro", "Isla", "Jamal",
    "Kira", "Leo", "Maya", "Noah", "Olga", "Priya", "Quinn", "Rosa", "Sam", "Tara",
]

Problem = tuple[str, list[str], int]
"""(question, solution steps, final answer)."""


def _shop(rng: random.Random) -> Problem:
    """Buy several priced items, pay with a bill, get change."""
    name = rng.choice(_NAMES)
    a, pa = rng.randint(2, 9), rng.randint(2, 12)
    b, pb = rng.randint(2, 9), rng.randint(2, 12)
    cost_a, cost_b = a * pa, b * pb
    total = cost_a + cost_b
    paid = (total // 50 + 1) * 50 if total % 50 else total + 50
    question = (
        f"{name} buys {a} notebooks at ${pa} each and {b} pens at ${pb} each. "
        f"{name} pays with ${paid}. How much change does {name} get, in dollars?"
    )
    steps = [
        f"The notebooks cost {a} * {pa} = {cost_a} dollars.",
        f"The pens cost {b} * {pb} = {cost_b} dollars.",
        f"Together they cost {cost_a} + {cost_b} = {total} dollars.",
        f"The change is {paid} - {total} = {paid - total} dollars.",
    ]
    return question, steps, paid - total


def _boxes(rng: random.Random) -> Problem:
    """Fill boxes, remove some, share the rest evenly."""
    name = rng.choice(_NAMES)
    share = rng.randint(2, 6)
    boxes, per_box = rng.randint(3, 12), rng.randint(4, 15)
    total = boxes * per_box
    each = rng.randint(1, (total - 1) // share)
    left = each * share
    eaten = total - left
    question = (
        f"{name} has {boxes} boxes with {per_box} apples in each box. {name} gives away {eaten} apples "
        f"and splits the rest equally among {share} friends. How many apples does each friend get?"
    )
    steps = [
        f"{name} starts with {boxes} * {per_box} = {total} apples.",
        f"After giving away {eaten}, {total} - {eaten} = {left} apples are left.",
        f"Each friend gets {left} / {share} = {each} apples.",
    ]
    return question, steps, each


def _savings(rng: random.Random) -> Problem:
    """Weekly savings minus a purchase."""
    name = rng.choice(_NAMES)
    start, weekly, weeks = rng.randint(10, 90), rng.randint(5, 25), rng.randint(3, 10)
    saved = weekly * weeks
    total = start + saved
    spent = rng.randint(5, total - 1)
    question = (
        f"{name} has ${start} and saves ${weekly} every week for {weeks} weeks. "
        f"Then {name} spends ${spent} on a game. How many dollars does {name} have now?"
    )
    steps = [
        f"{name} saves {weekly} * {weeks} = {saved} dollars.",
        f"{name} then has {start} + {saved} = {total} dollars.",
        f"After the game, {name} has {total} - {spent} = {total - spent} dollars.",
    ]
    return question, steps, total - spent


def _bus(rng: random.Random) -> Problem:
    """Passengers getting on and off over stops."""
    start, on1 = rng.randint(5, 40), rng.randint(2, 20)
    off1 = rng.randint(1, min(10, start + on1 - 1))
    mid = start + on1 - off1
    off2 = rng.randint(1, mid)
    on2 = rng.randint(0, 15)
    end = mid - off2 + on2
    question = (
        f"A bus leaves with {start} passengers. At the first stop {on1} people get on and {off1} get off. "
        f"At the second stop {off2} get off and {on2} get on. How many passengers are on the bus now?"
    )
    steps = [
        f"After the first stop there are {start} + {on1} - {off1} = {mid} passengers.",
        f"After the second stop there are {mid} - {off2} + {on2} = {end} passengers.",
    ]
    return question, steps, end


def _garden(rng: random.Random) -> Problem:
    """Rows of plants, some failing, then a multiplier on yield."""
    name = rng.choice(_NAMES)
    rows, per_row = rng.randint(3, 12), rng.randint(3, 12)
    plants = rows * per_row
    died = rng.randint(1, plants - 1)
    alive = plants - died
    per_plant = rng.randint(2, 9)
    question = (
        f"{name} plants {rows} rows of tomato plants with {per_row} plants in each row. {died} plants die. "
        f"Each remaining plant gives {per_plant} tomatoes. How many tomatoes does {name} pick?"
    )
    steps = [
        f"{name} plants {rows} * {per_row} = {plants} plants.",
        f"{plants} - {died} = {alive} plants survive.",
        f"They give {alive} * {per_plant} = {alive * per_plant} tomatoes.",
    ]
    return question, steps, alive * per_plant


def _pages(rng: random.Random) -> Problem:
    """Reading pages over days at two rates."""
    name = rng.choice(_NAMES)
    d1, r1, d2, r2 = rng.randint(2, 7), rng.randint(5, 30), rng.randint(2, 7), rng.randint(5, 30)
    first, second = d1 * r1, d2 * r2
    read = first + second
    book = read + rng.randint(0, 120)
    question = (
        f"{name}'s book has {book} pages. {name} reads {r1} pages a day for {d1} days, "
        f"then {r2} pages a day for {d2} days. How many pages are left to read?"
    )
    steps = [
        f"First {name} reads {r1} * {d1} = {first} pages.",
        f"Then {name} reads {r2} * {d2} = {second} pages.",
        f"In total {name} reads {first} + {second} = {read} pages.",
        f"{book} - {read} = {book - read} pages are left.",
    ]
    return question, steps, book - read


_GENERATORS: list[Callable[[random.Random], Problem]] = [_shop, _boxes, _savings, _bus, _garden, _pages]


def arithmetic_problems(n: int, seed: int) -> list[Problem]:
    """Generate `n` deterministic multi-step arithmetic problems as (question, steps, answer)."""
    if n < 0:
        raise ValueError(f"n must be non-negative, got {n}")
    rng = random.Random(f"captrack-arithmetic-{seed}")
    return [rng.choice(_GENERATORS)(rng) for _ in range(n)]


def arithmetic_sft_rows(n: int, seed: int) -> list[dict[str, Any]]:
    """Generate `n` deterministic multi-step arithmetic word problems as chat rows ending in `#### <answer>`."""
    return [
        {
            "messages": [
                {"role": "user", "content": question},
                {"role": "assistant", "content": format_solution(steps, answer)},
            ]
        }
        for question, steps, answer in arithmetic_problems(n, seed)
    ]


def format_solution(steps: list[str], answer: int) -> str:
    """Join worked steps and the final `#### <answer>` line into one assistant reply."""
    return "\n".join(steps) + f"\n#### {answer}"


def train_config(
    base_dir: Path,
    rows: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
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
    )


def hashed_config(base_dir: Path, rows: list[dict[str, Any]], method: str, **settings: Any) -> dict[str, Any]:
    """Return a training config keyed by base model, data, method and `settings`, plus its `config_hash`."""
    data_hash = hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()
    config: dict[str, Any] = {
        "base_dir": str(Path(base_dir).resolve()),
        "base_fingerprint": _dir_fingerprint(Path(base_dir)),
        "data_sha256": data_hash,
        "n_rows": len(rows),
        **settings,
        "method": method,
    }
    config["config_hash"] = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    return config


def train_sft(
    base_dir: Path,
    out_dir: Path,
    rows: list[dict[str, Any]],
    steps: int,
    seed: int = 0,
    learning_rate: float = DEFAULT_LEARNING_RATE,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = DEFAULT_MAX_LENGTH,
) -> dict[str, Any]:
    """Full-parameter SFT of `base_dir` on chat `rows` with TRL on CPU; save atomically to `out_dir`."""
    check_inputs(rows, steps)
    config = train_config(base_dir, rows, steps, seed, learning_rate, batch_size, max_length)
    examples = [_prompt_completion(row) for row in rows]

    def run(tmp: Path) -> dict[str, Any]:
        import datasets
        from trl import SFTConfig, SFTTrainer

        tokenizer, model = load_base(Path(base_dir), seed)
        dataset = datasets.Dataset.from_list(examples)
        args = SFTConfig(
            **trainer_args(tmp, steps, seed, learning_rate, batch_size),
            max_length=max_length,
            completion_only_loss=True,
            packing=False,
        )
        trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
        record = fit_and_save(trainer, tokenizer, tmp)
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


def check_inputs(rows: list[dict[str, Any]], steps: int) -> None:
    """Reject a non-positive step count or empty training data."""
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    if not rows:
        raise ValueError("rows must not be empty")


def train_cached(out_dir: Path, config: dict[str, Any], run: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Reuse `out_dir` if its record has `config`'s hash, else `run(tmp)` and publish tmp atomically with a record."""
    cached = _load_record(out_dir)
    if cached is not None and cached.get("config", {}).get("config_hash") == config["config_hash"]:
        return {**cached, "cached": True}
    if out_dir.exists() and cached is None and any(out_dir.iterdir()):
        raise InputError(
            f"{out_dir} exists and is not a captrack training output (no {RECORD_FILE}); "
            "choose another out_dir or remove it"
        )

    start = time.perf_counter()
    import datasets

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    bars_were_disabled = datasets.are_progress_bars_disabled()
    try:
        datasets.disable_progress_bars()  # TRL's map() calls would print several bars per run
        metrics = run(tmp)
        shutil.rmtree(tmp / "_trainer", ignore_errors=True)
        record: dict[str, Any] = {
            "config": config,
            **metrics,
            "wall_seconds": round(time.perf_counter() - start, 2),
            "cached": False,
        }
        (tmp / RECORD_FILE).write_text(json.dumps(record, indent=2) + "\n")
        _replace_dir(tmp, out_dir)
    finally:
        if not bars_were_disabled:
            datasets.enable_progress_bars()
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return record


def load_base(base_dir: Path, seed: int) -> tuple[Any, Any]:
    """Seed everything, then load the chat tokenizer (pad = eos if unset) and an fp32 model from `base_dir`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, set_seed

    set_seed(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_dir, local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.chat_template:
        raise ValueError(f"tokenizer in {base_dir} has no chat template")
    model = AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32, local_files_only=True)
    return tokenizer, model


def trainer_args(tmp: Path, steps: int, seed: int, learning_rate: float, batch_size: int) -> dict[str, Any]:
    """TrainingArguments shared by every captrack run: CPU, fp32, cosine schedule, log every step, no saving or hub."""
    return {
        "output_dir": str(tmp / "_trainer"),
        "max_steps": steps,
        "per_device_train_batch_size": batch_size,
        "gradient_accumulation_steps": 1,
        "learning_rate": learning_rate,
        "lr_scheduler_type": "cosine",
        "warmup_steps": min(3, steps // 4),
        "weight_decay": 0.0,
        "logging_steps": 1,
        "logging_first_step": True,
        "save_strategy": "no",
        "eval_strategy": "no",
        "report_to": [],
        "push_to_hub": False,
        "use_cpu": True,
        "bf16": False,  # TRL configs default bf16 to True
        "fp16": False,
        "gradient_checkpointing": False,  # TRL configs default it to True; slower and pointless at this size
        "seed": seed,
        "data_seed": seed,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        "log_level": "warning",
    }


def fit_and_save(trainer: Any, tokenizer: Any, tmp: Path) -> dict[str, Any]:
    """Train quietly, save model and tokenizer into `tmp`; return steps, timings and the trainer's log history."""
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    before = {k: v.detach().clone() for k, v in trainer.model.state_dict().items() if v.is_floating_point()}
    train_start, cpu_start = time.perf_counter(), time.process_time()
    trainer.train()
    train_seconds = time.perf_counter() - train_start
    cpu_seconds = time.process_time() - cpu_start
    change = _relative_change(before, trainer.model.state_dict())
    trainer.save_model(str(tmp))
    tokenizer.save_pretrained(str(tmp))
    return {
        "steps": int(trainer.state.global_step),
        "train_seconds": round(train_seconds, 2),
        "train_cpu_seconds": round(cpu_seconds, 2),
        "weight_change": change,
        "log_history": list(trainer.state.log_history),
    }


def _relative_change(before: dict[str, Any], after: dict[str, Any]) -> float:
    """‖θ − θ₀‖₂ / ‖θ₀‖₂ over all floating-point weights: 0 means training left the model untouched."""
    moved = sum(float((after[k].detach().float() - v.float()).pow(2).sum()) for k, v in before.items())
    size = sum(float(v.float().pow(2).sum()) for v in before.values())
    return moved ** 0.5 / size ** 0.5 if size else math.nan


def last_logged(log_history: list[dict[str, Any]], key: str) -> int:
    """The last logged integer value of `key`, or 0."""
    values = [e[key] for e in log_history if key in e]
    return int(values[-1]) if values else 0


def _prompt_completion(row: dict[str, Any]) -> dict[str, Any]:
    """Split a chat row into conversational prompt/completion so TRL masks the loss to the final reply."""
    messages = row["messages"]
    if not messages or messages[-1]["role"] != "assistant":
        raise ValueError("each row's messages must end with an assistant turn")
    return {"prompt": messages[:-1], "completion": messages[-1:]}


def _dir_fingerprint(directory: Path) -> str:
    """Cheap identity of a model directory: names, sizes and mtimes of its top-level files."""
    if not directory.is_dir():
        return "missing"
    entries = sorted(
        (p.name, p.stat().st_size, int(p.stat().st_mtime)) for p in directory.iterdir() if p.is_file()
    )
    return hashlib.sha256(json.dumps(entries).encode()).hexdigest()[:16]


def _load_record(out_dir: Path) -> dict[str, Any] | None:
    """Return the stored training record of a finished run in `out_dir`, if any."""
    path = out_dir / RECORD_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _replace_dir(tmp: Path, target: Path) -> None:
    """Move `tmp` to `target`, atomically swapping out any previous directory there."""
    os.chmod(tmp, 0o755)  # mkdtemp makes it 0700
    if not target.exists():
        os.rename(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)
