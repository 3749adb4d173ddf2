"""Tiny random models of the families captrack-ds must handle, all sharing one locally built tokenizer.

Sizes are the smallest that still exercise what tensor parallelism splits: 4 query heads over 2
key-value heads (divisible by 2 ranks), experts for the MoE families, Qwen3-Next's linear-attention
layer next to a full-attention one. Weights are saved as several safetensors shards so that meta-device
loading reads more than one file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FAMILIES = ("llama", "qwen2", "qwen3", "mistral", "mixtral", "qwen3_moe", "gemma3_text", "qwen3_next")

TEXTS = ["What is the capital of France? Answer: Paris", "Question: the opposite of hot is cold",
         "Tom has 3 apples and buys 2 more. How many apples? 5", "The answer is 12."] * 10

_COMMON: dict[str, Any] = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                           "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 1024}
_MOE = {"num_experts_per_tok": 2, "moe_intermediate_size": 16}
_EXTRA: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": True},
    "qwen2": {"tie_word_embeddings": False},
    "gemma3_text": {"head_dim": 8, "sliding_window": 16, "tie_word_embeddings": True},
    "qwen3": {"head_dim": 8, "tie_word_embeddings": False},
    "mistral": {"sliding_window": None},
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen3_moe": {"head_dim": 8, "num_experts": 4, "decoder_sparse_step": 1, **_MOE},
    "qwen3_next": {"head_dim": 8, "num_experts": 4, "partial_rotary_factor": 0.5, "linear_num_key_heads": 2,
                   "linear_num_value_heads": 4, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
                   "shared_expert_intermediate_size": 16, "layer_types": ["linear_attention", "full_attention"],
                   **_MOE},
}


def build_family(root: Path, family: str, seed: int = 0) -> Path:
    """Save a random `family` model with the shared tokenizer into ``root/family`` and return it."""
    import torch
    from tinymodel import build_tiny_model
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    folder = root / family
    if (folder / "config.json").is_file():
        return folder
    reference = root / "_tokenizer"
    if not (reference / "tokenizer.json").is_file():
        build_tiny_model(reference, TEXTS, seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(reference)
    ids = {"vocab_size": len(tokenizer), "bos_token_id": tokenizer.bos_token_id,
           "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id}
    config = AutoConfig.for_model(family, **_COMMON, **_EXTRA[family], **ids)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    _spread_weights(model)
    model.save_pretrained(folder, max_shard_size="40KB")
    tokenizer.save_pretrained(folder)
    return folder


def _spread_weights(model: Any) -> None:
    """Random init gives near-uniform next-token distributions; widen them so greedy decoding is decisive."""
    import torch

    with torch.no_grad():
        for name, param in model.named_parameters():
            if param.dim() == 2 and "embed" in name:
                param.normal_(0.0, 1.0)
