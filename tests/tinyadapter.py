"""A tiny random Llama that vLLM's CPU attention accepts (head size 32) and a PEFT LoRA adapter over it whose weights
are not zero (so a variant given by the adapter answers differently from its base): no download."""

from __future__ import annotations

from pathlib import Path

from tinymodel import build_tiny_model

ADAPTER_RANK = 8


def build_adapter_base(folder: Path, texts: list[str], seed: int = 0) -> Path:
    """tests/tinymodel.py's tokenizer and model, its attention widened to heads of 32 (vLLM's CPU backend supports
    head sizes 32 to 512; the shared tiny model's are 8)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    build_tiny_model(folder, texts, seed=seed)
    config = LlamaConfig.from_pretrained(folder)
    config.hidden_size, config.intermediate_size = 64, 128
    config.num_attention_heads, config.num_key_value_heads, config.head_dim = 2, 1, 32
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def build_adapter(base: Path, folder: Path, seed: int = 1) -> Path:
    """A LoRA adapter (rank 8, attention and MLP projections) over `base`, its A and B both random
    (``init_lora_weights=False``): a trained adapter's B is not zero either."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    config = LoraConfig(r=ADAPTER_RANK, lora_alpha=16, init_lora_weights=False, task_type="CAUSAL_LM",
                        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    torch.manual_seed(seed)
    get_peft_model(model, config).save_pretrained(folder)
    return folder
