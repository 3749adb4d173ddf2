"""Build a Hugging Face causal LM placed by DeepSpeed: tensor parallel (two ways) or ZeRO-3.

Each builder returns the plain `transformers` module (DeepSpeed has sharded or partitioned it in
place) plus whatever must stay alive while it is used; lm-eval's HFLM then drives it unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from captrack.backends.buffers import BufferSnapshot, keep_buffer_dtypes, snapshot_buffers
from captrack.backends.launch import remove_cpu_allreduce_buffer_at_exit
from captrack.backends.options import DSOptions
from captrack.bounded import load_json
from captrack.errors import InputError

__all__ = ["Placed", "place_model", "resolve_dtype", "safetensors_shards"]


@dataclass
class Placed:
    """A placed model and the DeepSpeed objects it depends on (kept referenced on purpose).

    `restored_buffers` names the buffers DeepSpeed had cast and captrack put back in the dtype
    transformers gave them (captrack.backends.buffers).
    """

    model: Any
    dtype: str
    keep_alive: list[Any] = field(default_factory=list)
    restored_buffers: list[str] = field(default_factory=list)


def _placed(model: Any, dtype: str, keep_alive: list[Any], snapshot: BufferSnapshot, replaced_layers: bool = False) -> Placed:
    """The placed model, its buffers back in the dtypes of `snapshot` (raises if that cannot be done)."""
    restored = keep_buffer_dtypes(model, snapshot, replaced_layers)
    return Placed(model, dtype, keep_alive, restored)


def resolve_dtype(dtype: str | None, accelerator: str) -> str:
    """The explicit dtype to use: the user's, else bfloat16 on an accelerator and float32 on CPU.

    DeepSpeed's own default is float16, which overflows on many recent checkpoints.
    """
    names = {"bf16": "bfloat16", "bfloat16": "bfloat16", "fp16": "float16", "float16": "float16",
             "half": "float16", "fp32": "float32", "float32": "float32", "float": "float32"}
    if dtype is None:
        return "float32" if accelerator == "cpu" else "bfloat16"
    if dtype.lower() not in names:
        raise InputError(f"model_args dtype={dtype!r}: expected bfloat16, float16 or float32")
    return names[dtype.lower()]


def safetensors_shards(folder: Path) -> list[str]:
    """The safetensors files of a checkpoint folder, in index order (empty when there are none)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        return sorted(set(load_json(index.read_text())["weight_map"].values()))
    return ["model.safetensors"] if (folder / "model.safetensors").is_file() else []


def place_model(path: str, options: DSOptions, world: int, accelerator: str, **hf_kwargs: Any) -> Placed:
    """Load the checkpoint at `path` and hand it to DeepSpeed as `options.mode` says."""
    dtype = resolve_dtype(options.dtype, accelerator)
    if accelerator == "cpu":  # DeepSpeed's CPU all-reduce leaves its shared memory behind otherwise
        remove_cpu_allreduce_buffer_at_exit()
    if options.mode == "zero3":
        return _zero3(path, options, dtype, hf_kwargs)
    if options.mode == "autotp":
        return _autotp(path, dtype, world, hf_kwargs)
    return _tp(path, options, dtype, world, hf_kwargs)


def _torch_dtype(name: str) -> Any:
    import torch

    return getattr(torch, name)


def _tp(path: str, options: DSOptions, dtype: str, world: int, hf_kwargs: dict[str, Any]) -> Placed:
    import deepspeed
    from transformers import AutoConfig, AutoModelForCausalLM

    shards = safetensors_shards(Path(path))
    # Kernel injection loads checkpoints through its own per-family containers; keep it off the meta path.
    meta = options.meta_load if options.meta_load is not None else world > 1 and not options.kernel_inject
    if meta and not shards:
        raise InputError(f"meta_load needs a safetensors checkpoint; {path} has none (pass meta_load=false)")
    extra: dict[str, Any] = {}
    if meta:
        # Parameters on the meta device (buffers such as rotary frequencies stay real); each rank
        # then reads the safetensors shards one at a time and keeps only its own slices.
        from accelerate import init_empty_weights

        config = AutoConfig.from_pretrained(path, **hf_kwargs)
        build = {k: v for k, v in hf_kwargs.items() if k in ("trust_remote_code", "attn_implementation")}
        with init_empty_weights():
            model = AutoModelForCausalLM.from_config(config, dtype=_torch_dtype(dtype), **build)
        extra = {"checkpoint": {"type": "ds_model", "version": 1.0, "checkpoints": shards}, "base_dir": path}
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(dtype), **hf_kwargs)
    snapshot = snapshot_buffers(model, dtype)
    # init_inference casts every floating buffer to `dtype` (rotary inv_freq included); _placed undoes it.
    engine = deepspeed.init_inference(model, tensor_parallel={"tp_size": world}, dtype=_torch_dtype(dtype),
                                      replace_with_kernel_inject=options.kernel_inject, **extra)
    return _placed(_no_retie(engine.module), dtype, [engine], snapshot, replaced_layers=options.kernel_inject)


def _ds_dtype_section(dtype: str) -> dict[str, Any]:
    if dtype == "bfloat16":
        return {"bf16": {"enabled": True}}
    if dtype == "float16":
        return {"fp16": {"enabled": True}}
    return {}


def _autotp(path: str, dtype: str, world: int, hf_kwargs: dict[str, Any]) -> Placed:
    import deepspeed
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(dtype), **hf_kwargs)
    snapshot = snapshot_buffers(model, dtype)
    config = {"train_micro_batch_size_per_gpu": 1, "tensor_parallel": {"autotp_size": world},
              "zero_optimization": {"stage": 0}, **_ds_dtype_section(dtype)}
    engine, *_ = deepspeed.initialize(model=model, config=config)
    engine.eval()
    return _placed(_no_retie(engine.module), dtype, [engine], snapshot)


def zero3_config(options: DSOptions, dtype: str, hidden_size: int) -> dict[str, Any]:
    """The DeepSpeed config for ZeRO-3 inference (HF's recommended bucket sizes, no "auto")."""
    offload: dict[str, Any] = {"device": options.offload}
    if options.offload != "none":
        offload["pin_memory"] = True
    if options.offload == "nvme":
        offload["nvme_path"] = options.nvme_path
    zero = {"stage": 3, "offload_param": offload, "overlap_comm": True,
            "stage3_prefetch_bucket_size": int(0.9 * hidden_size * hidden_size),
            "stage3_param_persistence_threshold": 10 * hidden_size,
            "reduce_bucket_size": hidden_size * hidden_size}
    return {"train_micro_batch_size_per_gpu": 1, "zero_optimization": zero, **_ds_dtype_section(dtype)}


def _zero3(path: str, options: DSOptions, dtype: str, hf_kwargs: dict[str, Any]) -> Placed:
    import deepspeed
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.integrations import HfDeepSpeedConfig

    hf_config = AutoConfig.from_pretrained(path, **hf_kwargs)
    text = getattr(hf_config, "text_config", None) or hf_config
    config = zero3_config(options, dtype, int(text.hidden_size))
    # Must exist (and stay referenced) before from_pretrained, which then partitions the weights
    # across ranks while loading instead of materialising the whole model on each rank.
    hf_ds = HfDeepSpeedConfig(config)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(dtype), **hf_kwargs)
    snapshot = snapshot_buffers(model, dtype)
    engine, *_ = deepspeed.initialize(model=model, config=config)
    engine.module.eval()
    return _placed(engine.module, dtype, [engine, hf_ds], snapshot)


def _no_retie(model: Any) -> Any:
    """Stop later `tie_weights()` calls (HFLM makes one) from undoing tensor-parallel sharding.

    Tied embeddings were tied before sharding; tying again would put the full embedding back into
    the sharded lm_head.
    """
    model.tie_weights = lambda *args, **kwargs: None
    return model
