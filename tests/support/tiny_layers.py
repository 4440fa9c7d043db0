"""Tiny random configs of models that mix positional schemes layer by layer (ModernBERT, Gemma 3,
SmolLM3, Llama 4 text, Cohere 2) and other modern LLMs' own forms of rotary (GPT-OSS, Qwen2-VL's
M-RoPE, DeepSeek V3's decoupled rotary)."""

from __future__ import annotations

from transformers import (
    Cohere2Config,
    CohereConfig,
    DeepseekV3Config,
    Gemma3TextConfig,
    GptOssConfig,
    Llama4TextConfig,
    ModernBertConfig,
    Qwen2VLConfig,
    SmolLM3Config,
)

from tests.support.tiny_models import VOCAB, Family

_IDS = dict(pad_token_id=0, bos_token_id=101, eos_token_id=102)
_SMALL = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_attention_heads=4, num_key_value_heads=2,
              max_position_embeddings=128, **_IDS)


def _modernbert():
    # 4 layers: 0 and 3 global (every 3rd), 1 and 2 local with a window of 8 tokens (±4)
    return ModernBertConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                            num_attention_heads=4, max_position_embeddings=128, global_attn_every_n_layers=3,
                            local_attention=8,
                            rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 160000.0},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                            pad_token_id=0, cls_token_id=101, sep_token_id=102)


def _gemma3():
    # 3 layers: sliding, sliding, full (sliding_window_pattern 3); global base 1e6 with linear scaling 8
    return Gemma3TextConfig(**_SMALL, num_hidden_layers=3, head_dim=8, sliding_window=8,
                            layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                            rope_parameters={"full_attention": {"rope_type": "linear", "rope_theta": 1000000.0,
                                                                "factor": 8.0},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}})


def _smollm3():
    # 4 layers, the 4th NoPE (no_rope_layer_interval 4)
    return SmolLM3Config(**_SMALL, num_hidden_layers=4, no_rope_layer_interval=4)


def _llama4():
    # 4 layers, the 4th NoPE; rotary as complex numbers on interleaved pairs
    return Llama4TextConfig(**_SMALL, intermediate_size_mlp=64, num_hidden_layers=4, head_dim=8,
                            num_local_experts=2, num_experts_per_tok=1, no_rope_layer_interval=4,
                            attention_chunk_size=16)


def _cohere2():
    # 4 layers: sliding, sliding, sliding, full (the full one without rotary)
    return Cohere2Config(**_SMALL, num_hidden_layers=4, sliding_window=8,
                         layer_types=["sliding_attention"] * 3 + ["full_attention"])


def _cohere():
    # Cohere's rotary pairs dimensions (2i, 2i + 1): its module repeats each frequency twice in a row
    return CohereConfig(**_SMALL, num_hidden_layers=1)


def _gpt_oss():
    return GptOssConfig(**_SMALL, num_hidden_layers=2, head_dim=8, num_local_experts=2, num_experts_per_tok=1,
                        sliding_window=8, layer_types=["sliding_attention", "full_attention"],
                        rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 4.0,
                                         "original_max_position_embeddings": 32, "beta_fast": 32.0,
                                         "beta_slow": 1.0, "truncate": False})


def _qwen2_vl():
    # head_dim 8: 4 frequency pairs in sections of 1 (temporal), 1 (height) and 2 (width)
    return Qwen2VLConfig(text_config=dict(**_SMALL, num_hidden_layers=1,
                                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                           "mrope_section": [1, 1, 2]}),
                         vision_config=dict(depth=1, embed_dim=16, hidden_size=32, num_heads=2, mlp_ratio=2,
                                            patch_size=4, spatial_merge_size=2, temporal_patch_size=2),
                         **_IDS)


def _deepseek_v3():
    # latent attention: 8 of each head's 16 query/key dimensions rotated
    return DeepseekV3Config(**{**_SMALL, "num_key_value_heads": 4}, num_hidden_layers=1, moe_intermediate_size=32, n_routed_experts=2,
                            num_experts_per_tok=1, n_group=1, topk_group=1, first_k_dense_replace=1,
                            kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8)


FAMILIES: dict[str, Family] = {
    "modernbert": Family("modernbert", _modernbert, "rotary"),
    "gemma3_text": Family("gemma3_text", _gemma3, "rotary"),
    "smollm3": Family("smollm3", _smollm3, "rotary"),
    "llama4_text": Family("llama4_text", _llama4, "rotary"),
    "cohere2": Family("cohere2", _cohere2, "rotary"),
    "cohere": Family("cohere", _cohere, "rotary"),
    "gpt_oss": Family("gpt_oss", _gpt_oss, "rotary"),
    "qwen2_vl": Family("qwen2_vl", _qwen2_vl, "rotary"),
    "deepseek_v3": Family("deepseek_v3", _deepseek_v3, "rotary"),
}
