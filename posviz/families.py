"""The family table: for each model type, its positional components and where its input parts live.

Data, not code: a new architecture of an existing scheme is one entry of :data:`FAMILIES`, a new
scheme one module of :mod:`posviz.positions` plus its entries here. Paths are attribute paths
below the base model (``model.base_model``), as transformers 5.x names them (the table "Where each
family keeps its positions" in ``docs/references.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from torch import nn

from posviz.hooks import Patch
from posviz.positions.alibi import AlibiSpec, bloom_alibi, falcon_alibi, mpt_alibi
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec
from posviz.positions.learned import LearnedTableSpec, module_offset, padding_offset
from posviz.positions.none import NoPositions, UnknownSpec
from posviz.positions.patches import PatchTableSpec
from posviz.positions.relative_bias import RelativeBiasSpec, mpnet_buckets, t5_buckets
from posviz.positions.relative_embeddings import RelativeEmbeddingsSpec
from posviz.positions.rotary import RotarySpec
from posviz.positions.sinusoid import SinusoidSpec


@dataclass(frozen=True)
class Family:
    """Where one model family keeps its positional information and the parts of its input.

    Attributes
    ----------
    positions : tuple of PositionSpec
        Every positional component, in the order the pages show them (MPNet: its absolute table,
        then its relative bias; T5: the encoder's bias, then the decoder's).
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
    text_tower : str or None
        Path of the module sentences run through where the base model takes more than text (CLIP's and
        SigLIP's text tower, beside their vision tower); None: the base model (its encoder, for an
        encoder-decoder model).
    """

    positions: tuple[PositionSpec, ...] = (UnknownSpec(),)
    token: tuple[str, ...] = ()
    token_scale: str | None = None
    segment: str | None = None
    layernorm: str | None = None
    text_tower: str | None = None

    @property
    def scheme(self) -> str:
        """The short name of the main (first) positional scheme."""
        return self.positions[0].scheme

    @property
    def scheme_label(self) -> str:
        """Every positional scheme of the family in words, joined by "+" (MPNet has two)."""
        return " + ".join(dict.fromkeys(spec.label for spec in self.positions))

    @property
    def positional(self) -> bool:
        """Whether a model of the family knows where its tokens stand (False: no positional encoding)."""
        return any(spec.positional for spec in self.positions)

    @property
    def input_positions(self) -> str | None:
        """Path of the module whose position vectors the model adds to its token embeddings at the
        input (:attr:`PositionSpec.input_path`); None where position acts inside attention only."""
        return next((spec.input_path for spec in self.positions if spec.input_path), None)

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> list[PositionEncoding]:
        """Every positional component's encoding (:meth:`PositionSpec.read`); ``[NoPositions]``
        where none of the family's modules exists in this model."""
        found = [spec.read(model, config, heads=heads, max_tokens=max_tokens) for spec in self.positions]
        return [e for e in found if e is not None] or [NoPositions("", 0)]

    def table_positions(self, model: nn.Module) -> int | None:
        """Positions the family's stored table holds, or None where it has none."""
        return next((n for spec in self.positions if (n := spec.table_positions(model)) is not None), None)

    def modules(self) -> list[str]:
        """Paths of every module a positions-only load must give real tensors."""
        return [path for spec in self.positions for path in spec.modules()]

    def removal(self, model: nn.Module) -> list[Patch]:
        """The patches that take every positional component out of ``model``.

        Raises
        ------
        PositionRemovalError
            Where a component cannot be hooked, or none of the family's modules was found.
        """
        patches = [patch for spec in self.positions for patch in spec.removal(model)]
        if not patches and any(spec.modules() for spec in self.positions):
            raise PositionRemovalError("posviz found no positional module to hook in this model.")
        return patches


_BERT_NOTE = ("BERT (and MiniLM, distilled from it) was pre-trained on 128-token inputs for 90 % of the steps, "
              "then on 512: look for a change near position 128.")
_BERT_LIKE = dict(token=("embeddings.word_embeddings",), segment="embeddings.token_type_embeddings",
                  layernorm="embeddings.LayerNorm")
_BERT = Family((LearnedTableSpec("embeddings.position_embeddings", note=_BERT_NOTE),), **_BERT_LIKE)
_BERT_ARCHITECTURE = Family((LearnedTableSpec("embeddings.position_embeddings"),), **_BERT_LIKE)
_ROBERTA = Family((LearnedTableSpec("embeddings.position_embeddings", padding_offset),), **_BERT_LIKE)
_BART = Family((LearnedTableSpec("encoder.embed_positions", module_offset),), token=("encoder.embed_tokens",),
               layernorm="encoder.layernorm_embedding")
_MARIAN = Family((SinusoidSpec("encoder.embed_positions", layout="halves"),), token=("encoder.embed_tokens",),
                 token_scale="encoder.embed_scale")
_M2M = Family((SinusoidSpec("encoder.embed_positions", module_offset, "weights", layout="t2t"),),
              token=("encoder.embed_tokens",))
_ROTARY = Family((RotarySpec(),), token=("embed_tokens", "embed_in", "word_embeddings"))
_T5 = Family((RelativeBiasSpec("encoder.block.0.layer.0.SelfAttention", t5_buckets, component="encoder"),
              RelativeBiasSpec("decoder.block.0.layer.0.SelfAttention", t5_buckets, component="decoder")),
             token=("encoder.embed_tokens",))


def _distilbert(config) -> Family:
    path = "embeddings.position_embeddings"
    table = (SinusoidSpec(path, layout="interleaved") if getattr(config, "sinusoidal_pos_embds", False)
             else LearnedTableSpec(path))
    return Family((table,), token=("embeddings.word_embeddings",), layernorm="embeddings.LayerNorm")


def _xlm(config) -> Family:
    path = "position_embeddings"
    table = (SinusoidSpec(path, layout="interleaved") if getattr(config, "sinusoidal_embeddings", False)
             else LearnedTableSpec(path))
    return Family((table,), token=("embeddings",), layernorm="layer_norm_emb")


def _falcon(config) -> Family:
    if getattr(config, "alibi", False):
        return Family((AlibiSpec(falcon_alibi, "transformers.models.falcon.modeling_falcon.build_alibi_tensor"),),
                      token=("word_embeddings",))
    return _ROTARY


_VIT = Family((PatchTableSpec("embeddings.position_embeddings"),))


def _two_towers(special: tuple[str, ...]) -> Family:
    """A text tower beside a vision tower (CLIP, SigLIP): each tower's table is a component of its own."""
    return Family((LearnedTableSpec("text_model.embeddings.position_embedding", component="text tower"),
                   PatchTableSpec("vision_model.embeddings.position_embedding", table_attr="weight",
                                  vision_config="vision_config", special=special, component="vision tower")),
                  token=("text_model.embeddings.token_embedding",), text_tower="text_model")


#: model_type (``config.model_type``) -> Family, or a function of the config for the families whose
#: scheme is a config option.
FAMILIES: dict[str, Family | Callable[..., Family]] = {
    "bert": _BERT,
    "albert": _BERT_ARCHITECTURE,
    "electra": _BERT_ARCHITECTURE,
    "roberta": _ROBERTA,
    "xlm-roberta": _ROBERTA,
    "camembert": _ROBERTA,
    "mpnet": Family((LearnedTableSpec("embeddings.position_embeddings", padding_offset, component="absolute table"),
                     RelativeBiasSpec("encoder", mpnet_buckets, component="relative bias")),
                    token=("embeddings.word_embeddings",), layernorm="embeddings.LayerNorm"),
    "distilbert": _distilbert,
    "xlm": _xlm,
    "gpt2": Family((LearnedTableSpec("wpe"),), token=("wte",)),
    "opt": Family((LearnedTableSpec("decoder.embed_positions", module_offset),),
                  token=("decoder.project_in", "decoder.embed_tokens")),
    "bart": _BART,
    "mbart": _BART,
    "marian": _MARIAN,
    "pegasus": _MARIAN,
    "m2m_100": _M2M,
    "nllb-moe": _M2M,
    "whisper": Family((SinusoidSpec("encoder.embed_positions", layout="t2t"),)),
    **{name: _ROTARY for name in (
        "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3_text",
        "gpt_neox", "phi", "phi3", "olmo", "olmo2", "stablelm", "cohere",
    )},
    "gptj": Family((RotarySpec(style="interleaved"),), token=("wte",)),
    "falcon": _falcon,
    "bloom": Family((AlibiSpec(bloom_alibi, "transformers.models.bloom.modeling_bloom.build_alibi_tensor"),),
                    token=("word_embeddings",), layernorm="word_embeddings_layernorm"),
    "mpt": Family((AlibiSpec(mpt_alibi, "transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor"),),
                  token=("wte",)),
    "t5": _T5,
    "mt5": _T5,
    "deberta-v2": Family((RelativeEmbeddingsSpec(),), token=("embeddings.word_embeddings",),
                         layernorm="embeddings.LayerNorm"),
    # ---------------------------------------------------------------- schemes that differ by layer


    # ---------------------------------------------------------------- vision towers
    "vit": _VIT,
    "dinov2": _VIT,
    "deit": Family((PatchTableSpec("embeddings.position_embeddings", special=("CLS", "distillation")),)),
    "clip": _two_towers(("CLS",)),
    "siglip": _two_towers(()),
    "clip_vision_model": Family((PatchTableSpec("embeddings.position_embedding", table_attr="weight"),)),
    "clip_text_model": Family((LearnedTableSpec("embeddings.position_embedding"),),
                              token=("embeddings.token_embedding",)),
    "siglip_vision_model": Family((PatchTableSpec("embeddings.position_embedding", table_attr="weight", special=()),)),


    # ---------------------------------------------------------------- speech, and schemes of their own


    # ---------------------------------------------------------------- more text families


}


def family_of(config) -> Family:
    """The :class:`Family` entry of a transformers config.

    Parameters
    ----------
    config : transformers.PretrainedConfig

    Returns
    -------
    Family
        The table's entry (evaluated on the config where the scheme is a config option:
        DistilBERT, XLM, Falcon); ``Family()`` (an unknown scheme) for a model type not in
        :data:`FAMILIES`.
    """
    entry = FAMILIES.get(config.model_type, Family())
    return entry(config) if callable(entry) else entry
