"""`captrack-ds`: lm-eval's HFLM driving a model that DeepSpeed has sharded or partitioned.

No task logic lives here. Every rank runs the whole evaluation in lockstep (same requests, same
fixed batch size) because each forward pass is a collective; lm-eval sees one model (rank 0 of a
world of one, its tensor-parallel contract) and only global rank 0 keeps the results.

    deepspeed --num_gpus 8 $(which captrack-eval) --model captrack-ds \\
        --model_args pretrained=/ckpt/Llama-3-70B,mode=tp --tasks 'captrack_*' --batch_size 8
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import os
from pathlib import Path
from typing import Any

from lm_eval.models.huggingface import HFLM

from captrack.backends.auto_placement import Placement, choose_placement, zero3_warning
from captrack.backends.launch import Ranks, ensure_process_env
from captrack.backends.options import (
    DSOptions,
    UnsupportedCombinationError,
    check_combination,
    parse_options,
)
from captrack.backends.placement import Placed, place_model, resolve_dtype
from captrack.backends.plan_table import DTYPE_BYTES
from captrack.bounded import load_json
from captrack.errors import InputError

__all__ = ["DeepSpeedLM", "resolve_auto"]

# A child of lm-eval's logger: shown wherever lm-eval's own messages are (captrack-eval, lm_eval CLI).
_log = logging.getLogger("lm_eval").getChild("captrack_ds")

# model_args for `from_pretrained` (trust_remote_code and revision also reach HFLM's tokenizer loading).
_LOAD_KEYS = ("trust_remote_code", "revision", "attn_implementation")


class DeepSpeedLM(HFLM):
    """HFLM over a DeepSpeed-placed model; model_args add mode, dtype, offload, nvme_path, kernel_inject."""

    def __init__(self, pretrained: str, batch_size: int | str = 1, device: str | None = None,
                 tokenizer: str | None = None, **kwargs: Any) -> None:
        del device  # DeepSpeed's accelerator and LOCAL_RANK decide the device
        options = parse_options(kwargs)
        launch = ensure_process_env()
        if launch.world > 1 and str(batch_size).startswith("auto"):
            raise UnsupportedCombinationError(
                f"batch_size={batch_size} under {launch.world} ranks: every rank must run the same batches "
                "in lockstep, and an OOM-probed size can differ between them. Pass an integer, e.g. --batch_size 8.")
        accelerator = _accelerator_name()
        config = _config_dict(pretrained, kwargs)
        options, placement = _placement(options, config, launch, accelerator, batch_size, kwargs)
        check_combination(options, config, launch.world, _transformers_version(),
                          accelerator, libaio=options.offload != "nvme" or _libaio_available())
        load_kwargs = {k: kwargs[k] for k in _LOAD_KEYS if k in kwargs}
        placed = place_model(pretrained, options, launch.world, accelerator, **load_kwargs)
        super().__init__(pretrained=placed.model, tokenizer=tokenizer or pretrained, batch_size=batch_size,
                         **{k: v for k, v in kwargs.items() if k != "attn_implementation"})
        self.pretrained = pretrained
        self.ds_options = options
        self.ds_launch = launch
        self.ds_placement = placement
        self._placed: Placed = placed
        _only_global_rank_zero_writes(launch)
        if launch.world > 1:
            atexit.register(_close_process_group)

    def get_model_info(self) -> dict[str, Any]:
        """HFLM's model info plus how DeepSpeed placed the model (recorded in results_*.json)."""
        info: dict[str, Any] = super().get_model_info()
        info.update({"deepspeed_mode": self.ds_options.mode, "deepspeed_world_size": self.ds_launch.world,
                     "deepspeed_dtype": self._placed.dtype, "deepspeed_offload": self.ds_options.offload,
                     "deepspeed_placement": self.ds_placement.reason,
                     "deepspeed_restored_buffers": list(self._placed.restored_buffers)})
        return info


def resolve_auto(options: DSOptions, placement: Placement, world: int) -> tuple[DSOptions, Placement]:
    """Turn mode=auto into the chosen mode for a launch of `world` ranks.

    Raises:
        UnsupportedCombinationError: the placement needs more GPUs than the launch has ranks.
    """
    if placement.gpus > world:
        raise UnsupportedCombinationError(
            f"mode=auto: {placement.reason}, which needs {placement.gpus} ranks, and this launch has {world}. "
            f"Launch one rank per GPU (`deepspeed --num_gpus {placement.gpus} $(which captrack-eval) ...` or "
            f"`torchrun --nproc_per_node {placement.gpus} ...`), or pass mode=zero3,offload=cpu to run on {world}.")
    if placement.gpus < world and placement.offload == "none":
        split = "tensor parallel" if placement.mode != "zero3" else "ZeRO-3"
        placement = dataclasses.replace(placement, gpus=world,
                                        reason=f"{placement.reason}; launched with {world} ranks: {split} across them")
    return dataclasses.replace(options, mode=placement.mode, offload=placement.offload), placement


def _placement(options: DSOptions, config: dict[str, Any], launch: Ranks, accelerator: str, batch_size: int | str,
               kwargs: dict[str, Any]) -> tuple[DSOptions, Placement]:
    """The options to place with and why: mode=auto resolved, or the user's mode (warned where ZeRO-3 is slow)."""
    dtype_bytes = DTYPE_BYTES[resolve_dtype(options.dtype, accelerator)]
    batch = int(batch_size) if str(batch_size).isdigit() else 8
    seq_len = int(kwargs.get("max_length") or 2048)
    gpus = _gpu_free_bytes(accelerator)
    if options.mode != "auto":
        warning = zero3_warning(config, gpus, dtype_bytes, seq_len, batch) if options.mode == "zero3" else None
        if warning:
            _log.warning(warning)
        asked = Placement(options.mode, options.offload, launch.world, f"mode={options.mode} asked for")
        return options, asked
    chosen = choose_placement(config, gpus, _host_free_bytes(), dtype_bytes, seq_len, batch, options.nvme_path)
    options, chosen = resolve_auto(options, chosen, launch.world)
    text = f"captrack-ds mode=auto chose mode={options.mode} offload={options.offload} on {launch.world} rank(s): {chosen.reason}"
    if launch.rank == 0:
        _log.info(text)
    return options, dataclasses.replace(chosen, reason=f"auto: {chosen.reason}")


def _gpu_free_bytes(accelerator: str) -> list[int]:
    """Free bytes on each visible GPU of this node (empty unless DeepSpeed's accelerator is CUDA)."""
    if accelerator != "cuda":
        return []
    import torch

    return [int(torch.cuda.mem_get_info(i)[0]) for i in range(torch.cuda.device_count())]


def _host_free_bytes() -> int:
    """Available host RAM (MemAvailable), 0 where /proc/meminfo cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _accelerator_name() -> str:
    from deepspeed.accelerator import get_accelerator

    return str(get_accelerator().device_name())


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


def _libaio_available() -> bool:
    from deepspeed.ops.op_builder import AsyncIOBuilder

    return bool(AsyncIOBuilder().is_compatible(verbose=False))


def _config_dict(pretrained: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The checkpoint's config.json as a dict (read from the folder, else through transformers)."""
    local = Path(pretrained) / "config.json"
    if local.is_file():
        from captrack.backends.memory_plan import check_config

        try:
            config = load_json(local.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"{local}: not a readable config.json ({exc})") from exc
        check_config(config, str(local))  # mode=auto plans from it: no list, null sizes, zero heads or 10^10 layers
        return dict(config)
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(pretrained, trust_remote_code=bool(kwargs.get("trust_remote_code")))
    return dict(config.to_dict())


def _only_global_rank_zero_writes(launch: Ranks) -> None:
    """Make lm-eval's writer test (``LOCAL_RANK == 0``) hold on global rank 0 only.

    On a multi-node launch each node has a LOCAL_RANK 0, and every one of them would write the same
    results. DeepSpeed has read LOCAL_RANK (device, process group) by now; lm-eval reads it only to
    pick the writer and to name its per-rank cache file, for which the global rank is right.
    """
    if launch.rank != 0 and launch.local_rank == 0:
        os.environ["LOCAL_RANK"] = str(launch.rank)


def _close_process_group() -> None:
    """Tear the process group down before interpreter exit (a live gloo group can abort the exit)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
