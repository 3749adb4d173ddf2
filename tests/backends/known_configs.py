"""Architecture fields of a few large public checkpoints, as their config.json files state them.

Written out here (never downloaded) so the memory planner can be checked against published sizes:
Llama-3-70B 70.6B parameters, Mixtral-8x7B 46.7B, Qwen3-Next-80B-A3B "80B" (its checkpoint also
carries a 1.6B multi-token-prediction layer that transformers does not load).
"""

from __future__ import annotations

LLAMA_3_70B = {
    "model_type": "llama", "vocab_size": 128256, "hidden_size": 8192, "intermediate_size": 28672,
    "num_hidden_layers": 80, "num_attention_heads": 64, "num_key_value_heads": 8, "tie_word_embeddings": False,
    "max_position_embeddings": 8192,
}
MIXTRAL_8X7B = {
    "model_type": "mixtral", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 8,
    "num_experts_per_tok": 2, "tie_word_embeddings": False, "max_position_embeddings": 32768,
}
QWEN3_NEXT_80B_A3B = {
    "model_type": "qwen3_next", "vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5120,
    "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "num_experts": 512, "num_experts_per_tok": 10,
    "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "decoder_sparse_step": 1,
    "full_attention_interval": 4, "mlp_only_layers": [], "tie_word_embeddings": False,
    "max_position_embeddings": 262144,
}
SMOLLM2_135M = {
    "model_type": "llama", "vocab_size": 49152, "hidden_size": 576, "intermediate_size": 1536,
    "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "tie_word_embeddings": True,
    "max_position_embeddings": 8192,
}
