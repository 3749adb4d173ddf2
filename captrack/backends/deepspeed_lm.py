"""`captrack-ds`: lm-eval's HFLM driving a model that DeepSpeed has sharded or partitioned.

No task logic lives here. Every rank runs the whole evaluation in lockstep (same requests, same
fixed batch size) because each forward pass is a collective; lm-eval sees one model (rank 0 of a
world of one, its tensor-parallel contract) and only global rank 0 keeps the results.

    deepspeed --num_gpus 8 $(which captrack-eval) --model captrack-ds \\
        --model_args pretrained=/ckpt/Llama-3-70B,mode=tp --tasks 'captrack_*' --batch_size 8
"""

from __future__ import annotations

import atexit
import json
import os
from pathlib import Path
from typing import Any

from lm_eval.models.huggingface import HFLM

from captrack.backends.launch import Ranks, ensure_process_env
from captrack.backends.options import (
    UnsupportedCombinationError,
    check_combination,
    parse_options,
)
from captrack.backends.placement import Placed, place_model

__all__ = ["DeepSpeedLM"]

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
        check_combination(options, _config_dict(pretrained, kwargs), launch.world, _transformers_version(),
                          accelerator, libaio=options.offload != "nvme" or _libaio_available())
        load_kwargs = {k: kwargs[k] for k in _LOAD_KEYS if k in kwargs}
        placed = place_model(pretrained, options, launch.world, accelerator, **load_kwargs)
        super().__init__(pretrained=placed.model, tokenizer=tokenizer or pretrained, batch_size=batch_size,
                         **{k: v for k, v in kwargs.items() if k != "attn_implementation"})
        self.pretrained = pretrained
        self.ds_options = options
        self.ds_launch = launch
        self._placed: Placed = placed
        _only_global_rank_zero_writes(launch)
        if launch.world > 1:
            atexit.register(_close_process_group)

    def get_model_info(self) -> dict[str, Any]:
        """HFLM's model info plus how DeepSpeed placed the model (recorded in results_*.json)."""
        info: dict[str, Any] = super().get_model_info()
        info.update({"deepspeed_mode": self.ds_options.mode, "deepspeed_world_size": self.ds_launch.world,
                     "deepspeed_dtype": self._placed.dtype, "deepspeed_offload": self.ds_options.offload})
        return info


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
        return dict(json.loads(local.read_text()))
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
