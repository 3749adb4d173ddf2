"""`captrack plan-memory`: per-GPU memory of each captrack-ds mode, from a model's config.json alone.

Estimates, not measurements: parameters are counted from the architecture fields (dense, MoE and
Qwen3-Next's hybrid linear attention), the KV cache from the full-attention layers, and a fixed
reserve covers the CUDA context and allocator slack. A mode "fits" when weights, KV cache, logits,
activations and the reserve stay under the GPU's memory.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from captrack.bounded import load_json
from captrack.errors import InputError

__all__ = ["ModePlan", "ModelShape", "check_config", "gpu_memory_arg", "load_config", "model_shape", "parse_size", "plan_memory"]

GB = 10**9
RESERVE_BYTES = 3 * GB  # CUDA context, NCCL buffers, allocator fragmentation
_REQUIRED = ("hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")


@dataclass(frozen=True)
class ModelShape:
    """Parameter counts and per-token cache sizes of one architecture (counts, not bytes)."""

    family: str
    params: int  # all parameters
    params_embedding: int  # input embedding (never sharded by AutoTP)
    params_replicated_tp: int  # kept whole on every rank under mode=tp (embedding, norms, routers)
    params_replicated_autotp: int  # ... under mode=autotp (also linear attention and shared experts)
    params_largest_layer: int  # what ZeRO-3 gathers at once (a decoder layer, or the lm_head)
    full_attention_layers: int
    kv_heads: int
    head_dim: int
    linear_state_per_seq: int  # Qwen3-Next recurrent + conv state elements per sequence (all layers)
    vocab: int
    hidden: int
    intermediate: int


@dataclass(frozen=True)
class ModePlan:
    """Per-GPU bytes of one mode and whether it fits."""

    mode: str
    weights: int
    kv_cache: int
    logits: int
    activations: int
    host: int  # host RAM per node that the mode needs for parameters (offload) or loading
    fits: bool
    note: str

    @property
    def total(self) -> int:
        """Everything on one GPU, reserve included."""
        return self.weights + self.kv_cache + self.logits + self.activations + RESERVE_BYTES


def parse_size(text: str) -> int:
    """'80GB' -> 80e9 bytes, '80GiB' -> 80 * 2**30; also MB/MiB, TB/TiB and plain bytes.

    Raises:
        InputError: not a number and a unit, or a size outside 1 MB .. 1 PB (no GPU has less or more).
    """
    match = re.fullmatch(r"\s*([0-9]{1,15}(?:\.[0-9]{1,6})?)\s*([KMGT]i?B)?\s*", text, flags=re.IGNORECASE)
    if not match:
        raise InputError(f"--gpu-mem {text!r}: expected a size such as 80GB or 141GiB")
    unit = (match.group(2) or "B").upper()
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12,
             "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40}[unit]
    size = int(float(match.group(1)) * scale)
    if not 10**6 <= size <= 10**15:
        raise InputError(f"--gpu-mem {text!r}: {size:,} bytes is not a GPU's memory; expected a size between 1MB and 1000TB, "
                         "e.g. 80GB")
    return size


def gpu_memory_arg(text: str) -> int:
    """argparse's ``type=`` of ``--gpu-mem``: `parse_size`, its refusal as argparse's usage error."""
    import argparse

    try:
        return parse_size(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--gpu-mem {text!r}: ")) from None


def load_config(path: str | Path) -> dict[str, Any]:
    """Read config.json from a file, a checkpoint folder, or a hub id's snapshot in the Hugging Face cache
    (multimodal configs: their text_config)."""
    target = Path(path)
    if target.is_dir():
        target = target / "config.json"
    if not target.is_file():
        target = _cached_hub_config(str(path)) or target
    if not target.is_file():
        raise InputError(f"{path}: no config.json there; give a checkpoint folder or a config.json file")
    try:
        config = load_json(target.read_text(encoding="utf-8"))
    except ValueError as exc:  # not JSON, not UTF-8, or nested past captrack.bounded's limit
        raise InputError(f"{target}: not a readable config.json ({exc})") from exc
    inner = config.get("text_config") if isinstance(config, dict) else None
    config = inner if isinstance(inner, dict) and inner else config
    check_config(config, str(target))
    return dict(config)


def _cached_hub_config(repo: str) -> Path | None:
    """config.json of hub model `repo` where the Hugging Face cache holds it (``captrack run --prepare`` put it there,
    or an earlier download); None otherwise (nothing is fetched)."""
    from huggingface_hub import try_to_load_from_cache
    from huggingface_hub.errors import HFValidationError

    if repo.startswith(("/", "~", ".")):
        return None
    try:
        found = try_to_load_from_cache(repo, "config.json")
    except (HFValidationError, ValueError, OSError):
        return None
    return Path(found) if isinstance(found, str) else None


# Architecture fields a plan reads, and the largest value any real model has (far above: a typo or a hostile file).
_BOUNDS = {"hidden_size": 10**6, "num_hidden_layers": 10**4, "num_attention_heads": 10**4, "vocab_size": 10**8,
           "num_key_value_heads": 10**4, "head_dim": 10**5, "intermediate_size": 10**7, "num_local_experts": 10**5,
           "num_experts": 10**5, "n_routed_experts": 10**5, "moe_intermediate_size": 10**7,
           "shared_expert_intermediate_size": 10**7, "n_shared_experts": 10**4, "linear_num_key_heads": 10**4,
           "linear_num_value_heads": 10**4, "linear_key_head_dim": 10**5, "linear_value_head_dim": 10**5,
           "linear_conv_kernel_dim": 10**3, "full_attention_interval": 10**4, "first_k_dense_replace": 10**4,
           "decoder_sparse_step": 10**4}
_POSITIVE = {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"}


def check_config(config: Any, where: str = "config") -> None:
    """Refuse a config that is no mapping, or whose size fields are not whole numbers in range (null, zero heads,
    10^10 layers): the plan would divide by zero, fail on None or count for hours.

    Raises:
        InputError: naming `where`, the field, its value and the range allowed.
    """
    if not isinstance(config, dict):
        raise InputError(f"{where}: a model config is a JSON object of fields (hidden_size, ...); got {type(config).__name__}")
    for key, top in _BOUNDS.items():
        if key not in config or (config[key] is None and key not in _POSITIVE):
            continue
        value, low = config[key], 1 if key in _POSITIVE else 0
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
            raise InputError(f"{where}: {key} is {str(value)[:40]!r}; expected a whole number in {low}..{top:,}")
    kinds = config.get("layer_types")
    if kinds is not None and (not isinstance(kinds, list) or len(kinds) < int(config.get("num_hidden_layers") or 0)):
        raise InputError(f"{where}: layer_types must be a list with one entry per layer (num_hidden_layers)")


def _layer_is_full_attention(config: dict[str, Any], index: int) -> bool:
    kinds = config.get("layer_types")
    if kinds:
        return str(kinds[index]) != "linear_attention"
    if config.get("model_type") == "qwen3_next":
        return (index + 1) % int(config.get("full_attention_interval", 4)) == 0
    return True


def _layer_is_moe(config: dict[str, Any], index: int, experts: int) -> bool:
    if experts <= 1:
        return False
    if index in set(config.get("mlp_only_layers") or []):
        return False
    if index < int(config.get("first_k_dense_replace", 0)):
        return False
    return (index + 1) % int(config.get("decoder_sparse_step", 1) or 1) == 0


def model_shape(config: dict[str, Any]) -> ModelShape:
    """Count parameters and cache sizes from a decoder-only config dict.

    Raises:
        InputError: a field the count needs is missing.
    """
    missing = [key for key in _REQUIRED if not isinstance(config, dict) or key not in config]
    if missing:
        raise InputError(f"config has no {', '.join(missing)}; plan-memory needs {', '.join(_REQUIRED)}")
    check_config(config)
    h, layers, vocab = int(config["hidden_size"]), int(config["num_hidden_layers"]), int(config["vocab_size"])
    nq = int(config["num_attention_heads"])
    nkv = int(config.get("num_key_value_heads") or nq)
    hd = int(config.get("head_dim") or h // nq)
    family = str(config.get("model_type", "unknown"))
    inter = int(config.get("intermediate_size") or 4 * h)
    experts = int(config.get("num_local_experts") or config.get("num_experts") or config.get("n_routed_experts") or 0)
    moe_inter = int(config.get("moe_intermediate_size") or inter)
    shared_inter = int(config.get("shared_expert_intermediate_size") or 0)
    shared_inter += int(config.get("n_shared_experts") or 0) * moe_inter
    gated_q = 2 if family == "qwen3_next" else 1  # Qwen3-Next's q_proj also emits an output gate
    bias = (nq + 2 * nkv) * hd if config.get("attention_bias") or family in ("qwen2", "qwen2_moe") else 0
    full_attn = h * nq * hd * gated_q + 2 * h * nkv * hd + nq * hd * h + bias
    nk, nv = int(config.get("linear_num_key_heads") or 0), int(config.get("linear_num_value_heads") or 0)
    dk, dv = int(config.get("linear_key_head_dim") or 0), int(config.get("linear_value_head_dim") or 0)
    conv_dim, kernel = 2 * nk * dk + nv * dv, int(config.get("linear_conv_kernel_dim") or 4)
    linear_attn = h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + conv_dim * kernel + 2 * nv + dv + nv * dv * h
    total, replicated_tp, replicated_autotp, largest, full_layers, linear_state = 0, 0, 0, 0, 0, 0
    for index in range(layers):
        full = _layer_is_full_attention(config, index)
        full_layers += full
        attention = full_attn if full else linear_attn
        if not full:
            linear_state += nv * dk * dv + conv_dim * (kernel - 1)
        if _layer_is_moe(config, index, experts):
            router, shared = h * experts, 3 * h * shared_inter + (h if shared_inter else 0)
            mlp = experts * 3 * h * moe_inter + router + shared
        else:
            router, shared, mlp = 0, 0, 3 * h * inter
        norms = 2 * h
        layer = attention + mlp + norms
        total += layer
        replicated_tp += norms + router
        replicated_autotp += norms + router + shared + (0 if full else attention)
        largest = max(largest, layer)
    embed = vocab * h
    tied = bool(config.get("tie_word_embeddings", False))
    total += embed + (0 if tied else embed) + h
    largest = max(largest, embed)
    return ModelShape(family=family, params=total, params_embedding=embed, params_replicated_tp=replicated_tp + embed + h,
                      params_replicated_autotp=replicated_autotp + embed + h, params_largest_layer=largest,
                      full_attention_layers=full_layers, kv_heads=nkv, head_dim=hd, linear_state_per_seq=linear_state,
                      vocab=vocab, hidden=h, intermediate=max(inter, moe_inter))


def plan_memory(config: dict[str, Any], gpus: int, gpu_mem: int, dtype_bytes: int = 2, seq_len: int = 4096,
                batch_size: int = 8, gpus_per_node: int | None = None) -> list[ModePlan]:
    """Per-GPU footprint of tp, autotp and zero3 (no offload, CPU, NVMe) on `gpus` GPUs of `gpu_mem` bytes.

    Host RAM is per node: tp loads on the meta device (each rank keeps its shard), autotp loads the
    whole model on every rank before sharding, zero3 partitions while loading, zero3+cpu keeps the
    node's part of the weights in pinned host memory.
    """
    if gpus < 1:
        raise InputError(f"--gpus {gpus}: need at least 1")
    local = min(gpus, gpus_per_node or 8)
    nodes = math.ceil(gpus / local)
    shape = model_shape(config)
    tokens = batch_size * seq_len
    kv_full = 2 * shape.full_attention_layers * shape.kv_heads * shape.head_dim * tokens * dtype_bytes
    state = shape.linear_state_per_seq * batch_size * dtype_bytes
    logits = 2 * tokens * shape.vocab * dtype_bytes  # logits and their log-softmax, full vocabulary on every rank
    total_weights = shape.params * dtype_bytes

    def activations(split: int) -> int:
        return 2 * tokens * (2 * shape.hidden + shape.intermediate // split) * dtype_bytes

    plans = []
    kv_tp = 2 * shape.full_attention_layers * math.ceil(shape.kv_heads / gpus) * shape.head_dim * tokens * dtype_bytes
    for mode, replicated in (("tp", shape.params_replicated_tp), ("autotp", shape.params_replicated_autotp)):
        weights = ((shape.params - replicated) // gpus + replicated) * dtype_bytes
        note = "kv heads replicated" if gpus > shape.kv_heads else ""
        if mode == "tp" and shape.family == "qwen3_next":
            note = "refused for Qwen3-Next: use autotp"
        kv = kv_tp + state
        host = weights * local if mode == "tp" else total_weights * local
        plans.append(_plan(mode, weights, kv, logits, activations(gpus), host, gpu_mem, note))
    working = 2 * shape.params_largest_layer * dtype_bytes  # the gathered layer and the prefetched next one
    zero_kv = kv_full + state
    plans.append(_plan("zero3", total_weights // gpus + working, zero_kv, logits, activations(1), 0, gpu_mem, ""))
    plans.append(_plan("zero3+cpu", working, zero_kv, logits, activations(1), total_weights // nodes, gpu_mem,
                       "weights in pinned host RAM"))
    plans.append(_plan("zero3+nvme", working, zero_kv, logits, activations(1), 0, gpu_mem,
                       f"{total_weights / nodes / GB:.0f} GB on NVMe per node; libaio"))
    return plans


def _plan(mode: str, weights: int, kv: int, logits: int, activations: int, host: int, gpu_mem: int,
          note: str) -> ModePlan:
    fits = weights + kv + logits + activations + RESERVE_BYTES <= gpu_mem and not note.startswith("refused")
    return ModePlan(mode, weights, kv, logits, activations, host, fits, note)
