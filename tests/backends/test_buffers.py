"""Buffers keep the dtype transformers gave them: a cast like DeepSpeed's is undone, or fails by name.

`deepspeed.init_inference(dtype=bfloat16)` runs `module.to(bfloat16)`, which casts the rotary
`inv_freq` that transformers keeps in float32; the same cast is applied here without DeepSpeed so
every family captrack supports is checked in a second (tests/backends/test_deepspeed_parity.py checks
the real placement).
"""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from captrack.backends.buffers import BufferDtypeError, keep_buffer_dtypes, snapshot_buffers

_SMALL = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
          "num_key_value_heads": 2, "vocab_size": 97, "max_position_embeddings": 256}
FAMILIES = {
    "llama": {}, "qwen2": {}, "qwen3": {"head_dim": 8}, "mistral": {"sliding_window": None},
    "mixtral": {"num_local_experts": 4, "num_experts_per_tok": 2},
    "qwen3_moe": {"head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16},
    "gemma": {"head_dim": 8}, "gemma3_text": {"head_dim": 8, "sliding_window": 16},
    "qwen3_next": {"head_dim": 8, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
                   "partial_rotary_factor": 0.5, "linear_num_key_heads": 2, "linear_num_value_heads": 4,
                   "linear_key_head_dim": 8, "linear_value_head_dim": 8, "shared_expert_intermediate_size": 16,
                   "layer_types": ["linear_attention", "full_attention"]},
}
IDS = torch.tensor([[5, 17, 3, 88, 41, 9, 60, 2, 33, 71, 12, 50] * 8])  # 96 positions: rotary angles matter


def _model(family: str) -> torch.nn.Module:
    torch.manual_seed(0)
    config = AutoConfig.for_model(family, **_SMALL, **FAMILIES[family])
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    return model.eval()


def _logits(model: torch.nn.Module) -> torch.Tensor:
    with torch.no_grad():
        return model(IDS).logits.float()


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_placement_cast_is_undone_and_outputs_are_bitwise_hf(family: str) -> None:
    hf = _model(family)
    float32 = {n for n, b in hf.named_buffers() if b.dtype == torch.float32}
    assert any(n.endswith("inv_freq") for n in float32), f"{family}: transformers keeps rotary inv_freq in float32"
    placed = copy.deepcopy(hf)
    snapshot = snapshot_buffers(placed, "bfloat16")
    placed.to(torch.bfloat16)  # what init_inference(dtype=bfloat16) does to the module
    assert not torch.equal(_logits(hf), _logits(placed))  # the artefact the guard exists for
    assert set(keep_buffer_dtypes(placed, snapshot)) == float32
    assert {n: b.dtype for n, b in placed.named_buffers()} == {n: b.dtype for n, b in hf.named_buffers()}
    assert torch.equal(_logits(hf), _logits(placed))


def test_the_cast_really_changes_bfloat16_loglikelihoods() -> None:
    hf = _model("llama")
    cast = copy.deepcopy(hf).to(torch.bfloat16)
    assert cast.model.rotary_emb.inv_freq.dtype == torch.bfloat16
    assert (_logits(hf) - _logits(cast)).abs().max() > 0


def test_a_buffer_that_cannot_be_put_back_fails_with_its_name() -> None:
    model = _model("llama")
    snapshot = snapshot_buffers(model, "bfloat16")
    rotary = model.model.rotary_emb
    rotary._buffers["inv_freq"] = rotary.inv_freq[:2].to(torch.bfloat16)  # resharded and cast
    with pytest.raises(BufferDtypeError, match=r"model\.rotary_emb\.inv_freq \(float32 -> bfloat16\)"):
        keep_buffer_dtypes(model, snapshot)


def test_a_dropped_buffer_fails_unless_kernels_replaced_the_layers() -> None:
    model = _model("llama")
    snapshot = snapshot_buffers(model, "bfloat16")
    del model.model.rotary_emb._buffers["inv_freq"]
    with pytest.raises(BufferDtypeError, match=r"dropped model\.rotary_emb\.inv_freq"):
        keep_buffer_dtypes(model, snapshot)
    assert keep_buffer_dtypes(model, snapshot, replaced_layers=True) == []


def test_float32_placement_changes_nothing() -> None:
    model = _model("llama").float()
    snapshot = snapshot_buffers(model, "float32")
    assert snapshot.originals == {}
    assert keep_buffer_dtypes(model.to(torch.float32), snapshot) == []
