"""Which positional scheme a model family uses, and where its modules live.

A new architecture is one entry in :data:`LAYOUTS`. Paths are attribute paths relative to the
base model (``model.base_model``), as listed in transformers 5.x; see the table "Where each
family keeps its positions" in the project's positional-schemes reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

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
    """Where one model family keeps the parts of its input representation, and its scheme.

    Attributes
    ----------
    scheme : str
        One of the scheme constants of this module.
    position : str or None
        Path of the learned position table (an ``nn.Embedding``) from the base model.
    token : tuple of str
        Candidate paths of the module whose output is the token vector the model adds; the
        first one that exists and is not None wins (OPT's ``project_in`` exists only when
        ``word_embed_proj_dim != hidden_size``).
    segment : str or None
        Path of the segment (token type) table; None where the family has none.
    layernorm : str or None
        Path of the embedding LayerNorm; None where the family has none (GPT-2, OPT).
    offset : callable or None
        ``offset(table) -> int``: rows of the table skipped before position 0.
    """

    scheme: str
    position: str | None = None
    token: tuple[str, ...] = ()
    segment: str | None = None
    layernorm: str | None = None
    offset: Callable[[nn.Module], int] | None = None


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

#: model_type (``config.model_type``) -> EmbeddingLayout.
LAYOUTS: dict[str, EmbeddingLayout] = {
    "bert": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "albert": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "electra": EmbeddingLayout(LEARNED_ABSOLUTE, **_BERT_LIKE),
    "roberta": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "xlm-roberta": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "camembert": EmbeddingLayout(LEARNED_ABSOLUTE, **_ROBERTA_LIKE),
    "distilbert": EmbeddingLayout(LEARNED_ABSOLUTE, **dict(_BERT_LIKE, segment=None)),
    "gpt2": EmbeddingLayout(LEARNED_ABSOLUTE, position="wpe", token=("wte",)),
    "opt": EmbeddingLayout(
        LEARNED_ABSOLUTE,
        position="decoder.embed_positions",
        token=("decoder.project_in", "decoder.embed_tokens"),
        offset=_module_offset,
    ),
    "bart": EmbeddingLayout(LEARNED_ABSOLUTE, **_BART_LIKE),
    "mbart": EmbeddingLayout(LEARNED_ABSOLUTE, **_BART_LIKE),
    **{name: EmbeddingLayout(ROTARY) for name in (
        "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text",
        "gpt_neox", "phi", "phi3", "gptj", "olmo", "olmo2", "stablelm", "cohere",
    )},
    "bloom": EmbeddingLayout(ALIBI),
    "mpt": EmbeddingLayout(ALIBI),
    "t5": EmbeddingLayout(RELATIVE_BIAS),
    "mt5": EmbeddingLayout(RELATIVE_BIAS),
    "deberta-v2": EmbeddingLayout(RELATIVE_EMBEDDINGS),
    **{name: EmbeddingLayout(SINUSOIDAL) for name in ("marian", "pegasus", "m2m_100", "nllb-moe", "whisper")},
}


def layout_of(config) -> EmbeddingLayout:
    """The :class:`EmbeddingLayout` entry for a transformers config.

    Parameters
    ----------
    config : transformers.PretrainedConfig

    Returns
    -------
    Family
        The registry entry; for Falcon, ALiBi when ``config.alibi`` else rotary; for a model type
        not in :data:`LAYOUTS`, ``EmbeddingLayout(UNKNOWN)``.
    """
    if config.model_type == "falcon":
        return EmbeddingLayout(ALIBI if getattr(config, "alibi", False) else ROTARY)
    return LAYOUTS.get(config.model_type, EmbeddingLayout(UNKNOWN))


def resolve(root: nn.Module, path: str) -> nn.Module | None:
    """The submodule at a dotted ``path`` below ``root``; None where any step is missing or None."""
    node = root
    for part in path.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def position_module(model: nn.Module, layout: EmbeddingLayout) -> tuple[nn.Module, int] | None:
    """The learned position table of ``model`` and its offset, or None where there is none.

    Parameters
    ----------
    model : nn.Module
        The base model.
    layout : EmbeddingLayout

    Returns
    -------
    (module, offset) or None
        ``module.weight[offset + p]`` is the vector added at 0-based position p.
    """
    table = resolve(model, layout.position) if layout.position else None
    if table is None:
        return None
    return table, layout.offset(table) if layout.offset else 0
