"""Which positional scheme a model family uses, and where its modules live.

A new architecture is one entry in :data:`LAYOUTS`. Paths are attribute paths relative to the
base model (``model.base_model``), as listed in transformers 5.x; see the table "Where each
family keeps its positions" in the project's positional-schemes reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn

LEARNED_ABSOLUTE = "learned_absolute"
SINUSOIDAL = "sinusoidal"
ROTARY = "rotary"
ALIBI = "alibi"
RELATIVE_BIAS = "relative_bias"
RELATIVE_EMBEDDINGS = "relative_embeddings"
NONE = "none"
UNKNOWN = "unknown"

SCHEME_LABELS = {
    LEARNED_ABSOLUTE: "learned absolute position embeddings",
    SINUSOIDAL: "fixed sinusoidal position embeddings",
    ROTARY: "rotary position embedding (RoPE)",
    ALIBI: "ALiBi (attention with linear biases)",
    RELATIVE_BIAS: "bucketed relative position bias",
    RELATIVE_EMBEDDINGS: "relative position embeddings (DeBERTa)",
    NONE: "no positional information",
    UNKNOWN: "a positional scheme posviz does not know yet",
}


def _module_offset(table: nn.Module) -> int:
    """Offset stored on the module itself (``OPTLearnedPositionalEmbedding.offset``, BART's)."""
    return int(table.offset)


def _padding_offset(table: nn.Module) -> int:
    """RoBERTa-style offset: position ids start at ``padding_idx + 1``."""
    return int(table.padding_idx) + 1


@dataclass(frozen=True)
class EmbeddingLayout:
    """Where one model family keeps its positional information and the parts of its input.

    Attributes
    ----------
    scheme : str
        One of the scheme constants of this module.
    position : str or None
        Path of the position table (learned, or a fixed sinusoid) from the base model.
    table_attr : str
        Attribute of the position module that holds the table (``"weights"`` for M2M100's buffer).
    offset : callable or None
        ``offset(module) -> int``: rows of the table skipped before position 0.
    sinusoid : str or None
        Layout of a fixed sinusoid table (``"interleaved"``, ``"halves"``, ``"t2t"``).
    token : tuple of str
        Candidate paths of the module whose output is the token vector the model adds; the
        first one that exists and is not None wins (OPT's ``project_in`` exists only when
        ``word_embed_proj_dim != hidden_size``).
    token_scale : str or None
        Path of a number the model multiplies the token vectors by outside the module
        (Marian's and Pegasus' ``embed_scale``).
    segment : str or None
        Path of the segment (token type) table; None where the family has none.
    layernorm : str or None
        Path of the embedding LayerNorm; None where the family has none (GPT-2, OPT).
    rotary : str or None
        Path of the rotary module; ``rotary_style`` says how it pairs dimensions.
    rotary_style : {"rotate_half", "interleaved"}
    alibi : callable or None
        ``alibi(config, heads, n) -> Tensor [heads, n]``: the model's own ALiBi builder for keys
        0 .. n-1 (slope × key position, up to a constant).
    relative_bias : tuple of str
        Paths of the modules holding a bucketed relative bias (``relative_attention_bias``),
        one per stack (T5: encoder, decoder); ``buckets(module)`` gives its bucket function.
    buckets : callable or None
    relative_embeddings : str or None
        Path of DeBERTa's encoder (``get_rel_embedding()``).
    """

    scheme: str
    position: str | None = None
    table_attr: str = "weight"
    offset: Callable[[nn.Module], int] | None = None
    sinusoid: str | None = None
    token: tuple[str, ...] = ()
    token_scale: str | None = None
    segment: str | None = None
    layernorm: str | None = None
    rotary: str | None = None
    rotary_style: str = "rotate_half"
    alibi: Callable | None = None
    relative_bias: tuple[str, ...] = ()
    buckets: Callable | None = None
    relative_embeddings: str | None = None


def _t5_buckets(attention: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``T5Attention._relative_position_bucket`` bound to the layer's own settings."""
    return lambda rel: attention._relative_position_bucket(
        rel, bidirectional=not attention.is_decoder, num_buckets=attention.relative_attention_num_buckets,
        max_distance=attention.relative_attention_max_distance)


def _mpnet_buckets(encoder: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``MPNetEncoder.relative_position_bucket`` with the table's number of buckets."""
    return lambda rel: encoder.relative_position_bucket(rel, num_buckets=encoder.relative_attention_bias.num_embeddings)


def _bloom_alibi(config, heads: int, n: int) -> torch.Tensor:
    """transformers.models.bloom.modeling_bloom.build_alibi_tensor"""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    return build_alibi_tensor(torch.ones(1, n), heads, torch.float32).reshape(heads, n)


def _falcon_alibi(config, heads: int, n: int) -> torch.Tensor:
    """transformers.models.falcon.modeling_falcon.build_alibi_tensor, × 2 / √head_dim

    Falcon's eager attention adds the builder's tensor to the raw scores before the 1/√head_dim
    scaling, and again, already scaled, through the causal mask (``FalconModel.forward``): the
    scaled scores get 2 / √head_dim times the builder's bias. BLOOM and MPT add it once, unscaled.
    """
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor

    head_dim = config.hidden_size // heads
    return build_alibi_tensor(torch.ones(1, n), heads, torch.float32).reshape(heads, n) * (2 / head_dim ** 0.5)


def _mpt_alibi(config, heads: int, n: int) -> torch.Tensor:
    """transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor"""
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    return build_mpt_alibi_tensor(heads, n, config.attn_config.alibi_bias_max).reshape(heads, n).float()


_BERT_LIKE = dict(
    position="embeddings.position_embeddings",
    token=("embeddings.word_embeddings",),
    segment="embeddings.token_type_embeddings",
    layernorm="embeddings.LayerNorm",
)
_ROBERTA_LIKE = dict(_BERT_LIKE, offset=_padding_offset)
_BART_LIKE = dict(
    position="encoder.embed_positions",
    token=("encoder.embed_tokens",),
    layernorm="encoder.layernorm_embedding",
    offset=_module_offset,
)
_MARIAN_LIKE = dict(position="encoder.embed_positions", sinusoid="halves", token=("encoder.embed_tokens",),
                    token_scale="encoder.embed_scale")
_M2M_LIKE = dict(position="encoder.embed_positions", table_attr="weights", offset=_module_offset, sinusoid="t2t",
                 token=("encoder.embed_tokens",))
_ROTARY = EmbeddingLayout(ROTARY, rotary="rotary_emb", token=("embed_tokens", "embed_in", "word_embeddings"))
_T5 = EmbeddingLayout(RELATIVE_BIAS, token=("encoder.embed_tokens",), relative_bias=("encoder.block.0.layer.0.SelfAttention",
                                                    "decoder.block.0.layer.0.SelfAttention"), buckets=_t5_buckets)


def _distilbert(config) -> EmbeddingLayout:
    sinusoid = bool(getattr(config, "sinusoidal_pos_embds", False))
    return EmbeddingLayout(SINUSOIDAL if sinusoid else LEARNED_ABSOLUTE, sinusoid="interleaved" if sinusoid else None,
                           **dict(_BERT_LIKE, segment=None))


def _xlm(config) -> EmbeddingLayout:
    sinusoid = bool(getattr(config, "sinusoidal_embeddings", False))
    return EmbeddingLayout(SINUSOIDAL if sinusoid else LEARNED_ABSOLUTE, sinusoid="interleaved" if sinusoid else None,
                           position="position_embeddings", token=("embeddings",), layernorm="layer_norm_emb")


def _falcon(config) -> EmbeddingLayout:
    if getattr(config, "alibi", False):
        return EmbeddingLayout(ALIBI, alibi=_falcon_alibi, token=("word_embeddings",))
    return _ROTARY


#: model_type (``config.model_type``) -> EmbeddingLayout, or a function of the config for the
#: families whose scheme is a config option.
LAYOUTS: dict[str, EmbeddingLayout | Callable] = {
    "bert": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "albert": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "electra": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "roberta": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "xlm-roberta": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "camembert": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "mpnet": EmbeddingLayout(LEARNED_ABSOLUTE, **dict(_ROBERTA_LIKE, segment=None), relative_bias=("encoder",),
                             buckets=_mpnet_buckets),
    "distilbert": _distilbert,
    "xlm": _xlm,
    "gpt2": EmbeddingLayout(LEARNED_ABSOLUTE, position="wpe", token=("wte",)),
    "opt": EmbeddingLayout(
        LEARNED_ABSOLUTE,
        position="decoder.embed_positions",
        token=("decoder.project_in", "decoder.embed_tokens"),
        offset=_module_offset,
    ),
    "bart": EmbeddingLayout(LEARNED_ABSOLUTE, **_BART_LIKE),
    "mbart": EmbeddingLayout(LEARNED_ABSOLUTE, **_BART_LIKE),
    "marian": EmbeddingLayout(SINUSOIDAL, **_MARIAN_LIKE),
    "pegasus": EmbeddingLayout(SINUSOIDAL, **_MARIAN_LIKE),
    "m2m_100": EmbeddingLayout(SINUSOIDAL, **_M2M_LIKE),
    "nllb-moe": EmbeddingLayout(SINUSOIDAL, **_M2M_LIKE),
    "whisper": EmbeddingLayout(SINUSOIDAL, position="encoder.embed_positions", sinusoid="t2t"),
    **{name: _ROTARY for name in (
        "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text",
        "gpt_neox", "phi", "phi3", "olmo", "olmo2", "stablelm", "cohere",
    )},
    "gptj": EmbeddingLayout(ROTARY, rotary="rotary_emb", rotary_style="interleaved", token=("wte",)),
    "falcon": _falcon,
    "bloom": EmbeddingLayout(ALIBI, alibi=_bloom_alibi, token=("word_embeddings",),
                             layernorm="word_embeddings_layernorm"),
    "mpt": EmbeddingLayout(ALIBI, alibi=_mpt_alibi, token=("wte",)),
    "t5": _T5,
    "mt5": _T5,
    "deberta-v2": EmbeddingLayout(RELATIVE_EMBEDDINGS, relative_embeddings="encoder",
                                  token=("embeddings.word_embeddings",), layernorm="embeddings.LayerNorm"),
}


def layout_of(config) -> EmbeddingLayout:
    """The :class:`EmbeddingLayout` entry for a transformers config.

    Parameters
    ----------
    config : transformers.PretrainedConfig

    Returns
    -------
    EmbeddingLayout
        The registry entry (evaluated on the config where the scheme is a config option:
        DistilBERT, XLM, Falcon); ``EmbeddingLayout(UNKNOWN)`` for a model type not in
        :data:`LAYOUTS`.
    """
    entry = LAYOUTS.get(config.model_type, EmbeddingLayout(UNKNOWN))
    return entry(config) if callable(entry) else entry


def resolve(root: nn.Module, path: str) -> nn.Module | None:
    """The attribute (a submodule, a tensor, a number) at a dotted ``path`` below ``root``; None where
    any step is missing or None."""
    node = root
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def position_modules(layout: EmbeddingLayout) -> list[str]:
    """Paths (below the base model) of the modules that hold a layout's positional information:
    the position table, the rotary module, each relative bias table, DeBERTa's relative
    embeddings and their LayerNorm. A positions-only load gives these, and only these, real
    tensors; ALiBi needs none (its slopes are a function of the config)."""
    paths = [layout.position, layout.rotary, *(f"{path}.relative_attention_bias" for path in layout.relative_bias)]
    if layout.relative_embeddings:
        paths += [f"{layout.relative_embeddings}.rel_embeddings", f"{layout.relative_embeddings}.LayerNorm"]
    return [path for path in paths if path]


def position_table(model: nn.Module, layout: EmbeddingLayout) -> tuple[torch.Tensor, int] | None:
    """The stored position table of ``model`` and its offset, or None where there is none.

    Parameters
    ----------
    model : nn.Module
        The base model.
    layout : EmbeddingLayout

    Returns
    -------
    (table, offset) or None
        ``table[offset + p]`` ([rows, width], the module's own tensor) is the vector added at
        0-based position p.
    """
    module = resolve(model, layout.position) if layout.position else None
    if module is None:
        return None
    return getattr(module, layout.table_attr), layout.offset(module) if layout.offset else 0
