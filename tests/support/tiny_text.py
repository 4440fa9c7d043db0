"""Tiny random configs of more text families with learned tables (Longformer, BigBird, LED, GPT-Neo …).

Each is saved with ``save_pretrained`` by :func:`tests.support.tiny_models.build_tiny` (hidden 32,
1-2 layers, 2-4 heads, a few dozen positions). Longformer and LED pad their input to a multiple of
``attention_window``: Longformer's window (8) pads the test sentence (12 tokens), LED's (4) does not,
and neither pads an input of every position (64).
"""

from __future__ import annotations

from transformers import (
    BertGenerationConfig,
    BigBirdConfig,
    BioGptConfig,
    CodeGenConfig,
    ConvBertConfig,
    Data2VecTextConfig,
    DebertaConfig,
    ErnieConfig,
    FunnelConfig,
    GPTBigCodeConfig,
    GPTNeoConfig,
    LayoutLMConfig,
    CamembertConfig,
    LEDConfig,
    MBartConfig,
    LongformerConfig,
    MegatronBertConfig,
    MobileBertConfig,
    OpenAIGPTConfig,
    SqueezeBertConfig,
)

from tests.support.tiny_models import VOCAB, Family

_SMALL = {"vocab_size": VOCAB, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
          "intermediate_size": 64}
_IDS = {"pad_token_id": 0, "bos_token_id": 101, "eos_token_id": 102}
_EMB = "embeddings."


def _bert_like(name: str, make_config, *, offset: int = 0, max_tokens: int = 64, token_types: bool = True,
               segment: bool = True, word: str = "word_embeddings") -> Family:
    """A family whose embeddings sit at BERT's paths (``embeddings.position_embeddings`` …)."""
    return Family(name, make_config, "learned_absolute", token_types=token_types,
                  position_module=_EMB + "position_embeddings", offset=offset, max_tokens=max_tokens,
                  word_module=_EMB + word, segment_module=_EMB + "token_type_embeddings" if segment else None,
                  layernorm_module=_EMB + "LayerNorm")


def _longformer():
    # RoBERTa's padding offset 2: 66 rows, 64 positions; window 8 pads 12 tokens to 16
    return LongformerConfig(**_SMALL, max_position_embeddings=66, type_vocab_size=1, attention_window=8,
                            pad_token_id=1, bos_token_id=0, eos_token_id=2, sep_token_id=2)


def _big_bird():
    return BigBirdConfig(**_SMALL, max_position_embeddings=64, type_vocab_size=2, attention_type="original_full",
                         **_IDS, sep_token_id=102)


def _led():
    # every layer's window 4: the test inputs (12, 20 and 64 tokens) need no padding
    return LEDConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                     decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                     max_encoder_position_embeddings=64, max_decoder_position_embeddings=64, attention_window=4,
                     pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


def _camembert():
    # RoBERTa's padding offset 2: 66 rows, 64 positions
    return CamembertConfig(**_SMALL, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                           eos_token_id=2)


def _mbart():
    # BART's offset 2 (MBartLearnedPositionalEmbedding): 66 rows, 64 positions
    return MBartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4,
                       decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
                       pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


def _deberta():
    # v1 with an absolute table as well (position_biased_input): relative positions -64 .. 63
    return DebertaConfig(**_SMALL, max_position_embeddings=64, type_vocab_size=2, relative_attention=True,
                         max_relative_positions=64, position_biased_input=True, pos_att_type=["c2p", "p2c"],
                         pad_token_id=0)


def _deberta_relative():
    # as microsoft/deberta-base: relative embeddings only
    return DebertaConfig(**_SMALL, max_position_embeddings=64, type_vocab_size=0, relative_attention=True,
                         max_relative_positions=-1, position_biased_input=False, pos_att_type=["c2p", "p2c"],
                         pad_token_id=0)


def _layoutlm():
    return LayoutLMConfig(**_SMALL, max_position_embeddings=64, max_2d_position_embeddings=1024, type_vocab_size=2,
                          pad_token_id=0)


def _gpt_neo():
    # one global and one local (window 8) layer
    return GPTNeoConfig(vocab_size=VOCAB, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=64,
                        max_position_embeddings=72, attention_types=[[["global", "local"], 1]], window_size=8, **_IDS)


def _gpt_bigcode():
    return GPTBigCodeConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_inner=64, n_positions=80,
                            multi_query=True, **_IDS)


def _codegen():
    # head_dim 8, rotate_every_two on the first 4 dims
    return CodeGenConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, rotary_dim=4, n_inner=64,
                         n_positions=96, n_ctx=96, **_IDS)


def _openai_gpt():
    return OpenAIGPTConfig(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=56)


def _biogpt():
    return BioGptConfig(**_SMALL, max_position_embeddings=60, scale_embedding=True, pad_token_id=1,
                        bos_token_id=0, eos_token_id=2)


def _funnel():
    # architectures named: AutoModel.from_config cannot choose between FunnelModel and FunnelBaseModel itself
    return FunnelConfig(vocab_size=VOCAB, block_sizes=[1, 1], num_decoder_layers=1, d_model=32, n_head=2, d_head=16,
                        d_inner=64, max_position_embeddings=64, type_vocab_size=3, pad_token_id=0,
                        architectures=["FunnelModel"])


def _convbert():
    return ConvBertConfig(**_SMALL, embedding_size=16, max_position_embeddings=60, type_vocab_size=2, head_ratio=2,
                          conv_kernel_size=3, num_groups=1, pad_token_id=0)


def _mobilebert():
    # the token vector is the output of embedding_transformation (a trigram of 16-wide word embeddings -> 32)
    return MobileBertConfig(vocab_size=VOCAB, hidden_size=32, embedding_size=16, num_hidden_layers=1,
                            num_attention_heads=4, intermediate_size=32, intra_bottleneck_size=16,
                            true_hidden_size=16, num_feedforward_networks=1, max_position_embeddings=56,
                            type_vocab_size=2, pad_token_id=0)


def _squeezebert():
    return SqueezeBertConfig(**_SMALL, embedding_size=32, max_position_embeddings=52, type_vocab_size=2,
                             q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2, intermediate_groups=2,
                             output_groups=2, pad_token_id=0)


def _megatron_bert():
    return MegatronBertConfig(**_SMALL, max_position_embeddings=48, type_vocab_size=2, pad_token_id=0)


def _ernie():
    # as ERNIE 3.0: a task-type embedding (task 0 unless given) added beside token, segment and position
    return ErnieConfig(**_SMALL, max_position_embeddings=48, type_vocab_size=2, use_task_id=True, task_type_vocab_size=3,
                       pad_token_id=0)


def _bert_generation():
    return BertGenerationConfig(**_SMALL, max_position_embeddings=48, pad_token_id=0, bos_token_id=101,
                                eos_token_id=102)


def _data2vec_text():
    return Data2VecTextConfig(**_SMALL, max_position_embeddings=50, type_vocab_size=1, pad_token_id=1,
                              bos_token_id=0, eos_token_id=2)


FAMILIES: dict[str, Family] = {
    "longformer": _bert_like("longformer", _longformer, offset=2, token_types=False),
    "big_bird": _bert_like("big_bird", _big_bird),
    "led": Family("led", _led, "learned_absolute", position_module="encoder.embed_positions", max_tokens=64,
                  word_module="encoder.embed_tokens", layernorm_module="encoder.layernorm_embedding",
                  encoder_decoder=True),
    "camembert": _bert_like("camembert", _camembert, offset=2, token_types=False),
    "mbart": Family("mbart", _mbart, "learned_absolute", position_module="encoder.embed_positions", offset=2,
                    max_tokens=64, word_module="encoder.embed_tokens", layernorm_module="encoder.layernorm_embedding",
                    encoder_decoder=True),
    "deberta": _bert_like("deberta", _deberta),
    "deberta-relative": Family("deberta-relative", _deberta_relative, "relative_embeddings"),
    "layoutlm": _bert_like("layoutlm", _layoutlm),
    "gpt_neo": Family("gpt_neo", _gpt_neo, "learned_absolute", position_module="wpe", max_tokens=72,
                      word_module="wte", first_layer_module="h.0"),
    "gpt_bigcode": Family("gpt_bigcode", _gpt_bigcode, "learned_absolute", position_module="wpe", max_tokens=80,
                          word_module="wte", first_layer_module="h.0"),
    "codegen": Family("codegen", _codegen, "rotary"),
    "openai-gpt": Family("openai-gpt", _openai_gpt, "learned_absolute", position_module="positions_embed",
                         max_tokens=56, word_module="tokens_embed", first_layer_module="h.0"),
    "biogpt": Family("biogpt", _biogpt, "learned_absolute", position_module="embed_positions", offset=2,
                     max_tokens=60, word_module="embed_tokens", first_layer_module="layers.0"),
    "funnel": Family("funnel", _funnel, "forward_built"),
    "convbert": _bert_like("convbert", _convbert, max_tokens=60),
    "mobilebert": _bert_like("mobilebert", _mobilebert, max_tokens=56, word="embedding_transformation"),
    "squeezebert": _bert_like("squeezebert", _squeezebert, max_tokens=52),
    "megatron-bert": Family("megatron-bert", _megatron_bert, "learned_absolute", token_types=True,
                            position_module=_EMB + "position_embeddings", max_tokens=48,
                            word_module=_EMB + "word_embeddings", segment_module=_EMB + "token_type_embeddings",
                            first_layer_module="encoder.layer.0"),
    "ernie": _bert_like("ernie", _ernie, max_tokens=48),
    "bert-generation": _bert_like("bert-generation", _bert_generation, max_tokens=48, token_types=False,
                                  segment=False),
    "data2vec-text": _bert_like("data2vec-text", _data2vec_text, offset=2, max_tokens=48, token_types=False),
}
