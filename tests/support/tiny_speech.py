"""Tiny random configs of speech encoders and decoders (wav2vec2, HuBERT, WavLM, Whisper) and other own-form schemes.

Mamba, Mamba-2, Falcon-Mamba, RWKV (no positional encoding), XLNet (relative sinusoid), Reformer (axial
table), CTRL and XGLM (sinusoids); tests in tests/test_families_speech.py and tests/test_app_speech.py.
"""

from __future__ import annotations

from transformers import (
    CTRLConfig,
    FalconMambaConfig,
    HubertConfig,
    Mamba2Config,
    MambaConfig,
    ReformerConfig,
    RwkvConfig,
    Wav2Vec2Config,
    WavLMConfig,
    WhisperConfig,
    XGLMConfig,
    XLNetConfig,
)

from tests.support.tiny_models import VOCAB, Family

#: The speech encoders' shared sizes: two small feature convolutions, a positional convolution of
#: width 16 (even: the last output frame is dropped) in 4 groups.
_SPEECH = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, conv_dim=(32, 32),
               conv_kernel=(10, 3), conv_stride=(5, 2), num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
               vocab_size=32)


def _wav2vec2():
    return Wav2Vec2Config(**_SPEECH)


def _hubert():
    return HubertConfig(**_SPEECH)


def _wavlm():
    # 32 buckets up to 64 frames: exact offsets below 8, logarithmic buckets beyond
    return WavLMConfig(**_SPEECH, num_buckets=32, max_bucket_distance=64)


def _whisper():
    return WhisperConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                         decoder_attention_heads=2, encoder_ffn_dim=37, decoder_ffn_dim=37, max_source_positions=64,
                         max_target_positions=48, num_mel_bins=8, pad_token_id=0, bos_token_id=1, eos_token_id=2,
                         decoder_start_token_id=3)


def _mamba():
    return MambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=4, num_hidden_layers=1, conv_kernel=4,
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _mamba2():
    return Mamba2Config(vocab_size=VOCAB, hidden_size=32, state_size=8, num_heads=4, head_dim=16, n_groups=1,
                        num_hidden_layers=1, conv_kernel=4, chunk_size=16,
                        pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _falcon_mamba():
    return FalconMambaConfig(vocab_size=VOCAB, hidden_size=32, state_size=4, num_hidden_layers=1, conv_kernel=4,
                             pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _rwkv():
    # two layers: RwkvPreTrainedModel._init_weights divides by num_hidden_layers - 1
    return RwkvConfig(vocab_size=VOCAB, hidden_size=32, attention_hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, context_length=64, bos_token_id=101, eos_token_id=102)


def _xlnet():
    return XLNetConfig(vocab_size=VOCAB, d_model=32, n_layer=1, n_head=4, d_inner=64,
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _reformer():
    # 8 × 8 = 64 positions from two factor tables of 16 dims each
    return ReformerConfig(vocab_size=VOCAB, hidden_size=32, num_attention_heads=2, attention_head_size=16,
                          attn_layers=["local"], feed_forward_size=64, axial_pos_embds=True, axial_pos_shape=(8, 8),
                          axial_pos_embds_dim=(16, 16), max_position_embeddings=64, local_attn_chunk_length=8,
                          is_decoder=False, pad_token_id=0, eos_token_id=102)


def _ctrl():
    return CTRLConfig(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=4, dff=64, n_positions=64)


def _xglm():
    return XGLMConfig(vocab_size=VOCAB, d_model=32, num_layers=1, attention_heads=4, ffn_dim=64,
                      max_position_embeddings=64, pad_token_id=1, bos_token_id=0, eos_token_id=2)


FAMILIES: dict[str, Family] = {
    "wav2vec2": Family("wav2vec2", _wav2vec2, "convolutional", tokenizer=False),
    "hubert": Family("hubert", _hubert, "convolutional", tokenizer=False),
    "wavlm": Family("wavlm", _wavlm, "convolutional", tokenizer=False),
    "whisper": Family("whisper", _whisper, "sinusoidal", position_module="decoder.embed_positions", max_tokens=48,
                      encoder_decoder=True),
    "mamba": Family("mamba", _mamba, "none", word_module="embeddings"),
    "mamba2": Family("mamba2", _mamba2, "none", word_module="embeddings"),
    "falcon_mamba": Family("falcon_mamba", _falcon_mamba, "none", word_module="embeddings"),
    "rwkv": Family("rwkv", _rwkv, "none", word_module="embeddings"),
    "xlnet": Family("xlnet", _xlnet, "relative_sinusoid", word_module="word_embedding"),
    "reformer": Family("reformer", _reformer, "axial", position_module="embeddings.position_embeddings",
                       max_tokens=64, word_module="embeddings.word_embeddings"),
    "ctrl": Family("ctrl", _ctrl, "sinusoidal", position_module="pos_encoding", max_tokens=64, word_module="w"),
    "xglm": Family("xglm", _xglm, "sinusoidal", position_module="embed_positions", offset=2, max_tokens=64,
                   word_module="embed_tokens"),
}
