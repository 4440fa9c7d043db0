"""Tiny random configs of models that mix positional schemes layer by layer (ModernBERT, Gemma 3,
SmolLM3, Llama 4 text, Cohere 2), other modern LLMs' own forms of rotary (GPT-OSS, Qwen2-VL's
M-RoPE, DeepSeek's decoupled rotary), and the Llama-like rotary families of the family table."""

from __future__ import annotations

from transformers import (
    Cohere2Config,
    CohereConfig,
    DeepseekV2Config,
    DeepseekV3Config,
    Gemma2Config,
    Gemma3Config,
    Gemma3TextConfig,
    GemmaConfig,
    GptOssConfig,
    Llama4TextConfig,
    MistralConfig,
    MixtralConfig,
    ModernBertConfig,
    Olmo2Config,
    OlmoConfig,
    Phi3Config,
    Qwen2_5_VLConfig,
    Qwen2Config,
    Qwen2VLConfig,
    Qwen2VLTextConfig,
    Qwen3Config,
    SmolLM3Config,
    StableLmConfig,
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


def _llama_like(config_class, **extra):
    """A one-layer config of a Llama-like family (rotary module ``rotary_emb``, Llama's apply function)."""
    return lambda: config_class(**{**_SMALL, "num_hidden_layers": 1, **extra})


def _deepseek_v2():
    return DeepseekV2Config(**{**_SMALL, "num_key_value_heads": 4}, num_hidden_layers=1, moe_intermediate_size=32,
                            n_routed_experts=2, num_experts_per_tok=1, n_group=1, topk_group=1,
                            first_k_dense_replace=1, kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8,
                            qk_nope_head_dim=8, v_head_dim=8)


def _gemma3_composite():
    text = _gemma3().to_dict()
    return Gemma3Config(text_config=text, vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                                             num_attention_heads=2, image_size=32, patch_size=8),
                        mm_tokens_per_image=4, **_IDS)


def _qwen2_5_vl():
    base = _qwen2_vl()
    return Qwen2_5_VLConfig(text_config=base.text_config.to_dict(),
                            vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                                               out_hidden_size=32, patch_size=4, spatial_merge_size=2,
                                               temporal_patch_size=2, fullatt_block_indexes=[0]), **_IDS)


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
    "deepseek_v2": Family("deepseek_v2", _deepseek_v2, "rotary"),
    "gemma3": Family("gemma3", _gemma3_composite, "rotary"),
    "qwen2_5_vl": Family("qwen2_5_vl", _qwen2_5_vl, "rotary"),
    "qwen2_vl_text": Family("qwen2_vl_text", lambda: Qwen2VLTextConfig(**_qwen2_vl().text_config.to_dict()),
                            "rotary"),
    **{name: Family(name, _llama_like(config, **extra), "rotary") for name, config, extra in (
        ("gemma", GemmaConfig, {"head_dim": 8}), ("gemma2", Gemma2Config, {"head_dim": 8}),
        ("mistral", MistralConfig, {}), ("mixtral", MixtralConfig, {"num_local_experts": 2, "num_experts_per_tok": 1}),
        ("olmo", OlmoConfig, {}), ("olmo2", Olmo2Config, {}), ("phi3", Phi3Config, {}), ("qwen2", Qwen2Config, {}),
        ("qwen3", Qwen3Config, {"head_dim": 8}), ("stablelm", StableLmConfig, {}))},
}
