"""The shared TRL harness: config hashing, cached atomic training runs, base loading and trainer settings."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError
from captrack.files import share_like_umask

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LEARNING_RATE",
    "DEFAULT_MAX_LENGTH",
    "RECORD_FILE",
    "CallbackFactory",
    "check_inputs",
    "fit_and_save",
    "hashed_config",
    "last_logged",
    "load_base",
    "train_cached",
    "trainer_args",
]


RECORD_FILE = "captrack_train.json"
CHECKPOINTS_DIR = "checkpoints"
"""Where a training with ``save_steps`` keeps its checkpoints: <out>/checkpoints/checkpoint-<step>/."""
CallbackFactory = Callable[[Any], Any]
"""Makes a transformers TrainerCallback from the trainer it will watch (TRL's callbacks take the trainer)."""
"""Record written into a finished fine-tuned model directory (config, config hash, metrics)."""


DEFAULT_LEARNING_RATE = 5e-5


DEFAULT_BATCH_SIZE = 2


DEFAULT_MAX_LENGTH = 256


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


def trainer_args(tmp: Path, steps: int, seed: int, learning_rate: float, batch_size: int, bf16: bool = False) -> dict[str, Any]:
    """TrainingArguments shared by every captrack run: CPU, cosine schedule, log every step, no saving or hub.

    Weights and optimizer state stay fp32; `bf16` runs forward and backward under CPU bfloat16 autocast
    (about 1.5x faster on CPUs with bfloat16 instructions such as AVX512-BF16 or AMX, slower without).
    """
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
        "bf16": bf16,  # TRL configs default bf16 to True
        "fp16": False,
        "gradient_checkpointing": False,  # TRL configs default it to True; slower and pointless at this size
        "seed": seed,
        "data_seed": seed,
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        "log_level": "warning",
    }


def fit_and_save(trainer: Any, tokenizer: Any, tmp: Path, callbacks: Sequence[CallbackFactory] = ()) -> dict[str, Any]:
    """Train quietly, save model and tokenizer into `tmp`; return steps, timings and the trainer's log history.

    `callbacks` make TrainerCallbacks from the trainer (e.g. ``lambda t: CapTrackCallback(t, tasks=[...])``).
    """
    from transformers import PrinterCallback

    trainer.remove_callback(PrinterCallback)
    trainer.add_callback(progress_callback(type(trainer).__name__))
    for make in callbacks:
        trainer.add_callback(make(trainer))
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


def progress_callback(label: str) -> Any:
    """A TrainerCallback showing step / total, the last loss or reward and the ETA (rich, on stderr)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from transformers import TrainerCallback

    class _Progress(TrainerCallback):
        def __init__(self) -> None:
            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=Console(stderr=True))
            self.task: Any = None

        def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar.start()
            self.task = self.bar.add_task(f"{label} steps", total=state.max_steps, last="")

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar.update(self.task, completed=state.global_step)
            if not self.bar.console.is_terminal:  # a worker's log file: rich draws no bar there, so one line per step
                task = self.bar.tasks[0]
                elapsed, eta = task.elapsed or 0.0, task.time_remaining
                fields = [f"{label} step {state.global_step}/{state.max_steps}", task.fields.get("last", ""),
                          f"{elapsed:.0f} s elapsed", f"ETA {eta:.0f} s" if eta is not None else ""]
                print(", ".join(f for f in fields if f), file=sys.stderr, flush=True)

        def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
            shown = [f"{key} {float(logs[key]):.4g}" for key in ("loss", "reward") if logs and key in logs]
            if shown:
                self.bar.update(self.task, last=", ".join(shown))

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.bar.stop()

    return _Progress()


def _relative_change(before: dict[str, Any], after: dict[str, Any]) -> float:
    """‖θ − θ₀‖₂ / ‖θ₀‖₂ over all floating-point weights: 0 means training left the model untouched."""
    moved = sum(float((after[k].detach().float() - v.float()).pow(2).sum()) for k, v in before.items())
    size = sum(float(v.float().pow(2).sum()) for v in before.values())
    return moved ** 0.5 / size ** 0.5 if size else math.nan


def last_logged(log_history: list[dict[str, Any]], key: str) -> int:
    """The last logged integer value of `key`, or 0."""
    values = [e[key] for e in log_history if key in e]
    return int(values[-1]) if values else 0


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
        record = load_json(path.read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _replace_dir(tmp: Path, target: Path) -> None:
    """Move `tmp` to `target`, atomically swapping out any previous directory there."""
    share_like_umask(tmp)  # mkdtemp makes it 0700
    if not target.exists():
        os.rename(tmp, target)
        return
    old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
    old.rmdir()
    os.rename(target, old)
    os.rename(tmp, target)
    shutil.rmtree(old, ignore_errors=True)


def with_checkpoints(config: dict[str, Any], save_steps: int | None) -> dict[str, Any]:
    """`config` with ``save_steps`` in it (re-hashed), so a training asked for checkpoints is not reused without them."""
    if not save_steps:
        return config
    if save_steps < 1:
        raise ValueError(f"save_steps must be >= 1, got {save_steps}")
    out = {k: v for k, v in config.items() if k != "config_hash"} | {"save_steps": int(save_steps)}
    out["config_hash"] = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()[:16]
    return out


def checkpoint_saver(tmp: Path, tokenizer: Any, save_steps: int | None) -> list[CallbackFactory]:
    """A callback saving weights, tokenizer and the step (trainer_state.json) every `save_steps` steps into
    ``tmp/checkpoints/checkpoint-<step>`` (none without `save_steps`); saving reads the weights, nothing else."""
    if not save_steps:
        return []
    every = int(save_steps)
    from transformers import TrainerCallback

    from captrack.results.checkpoints import tag_run_folder

    class CheckpointSaver(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            if state.global_step % every == 0 and state.is_world_process_zero:
                folder = tmp / CHECKPOINTS_DIR / f"checkpoint-{state.global_step}"
                kwargs["model"].save_pretrained(str(folder))
                tokenizer.save_pretrained(str(folder))
                tag_run_folder(folder, int(state.global_step), state.epoch)

    return [lambda _trainer: CheckpointSaver()]
