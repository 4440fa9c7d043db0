"""The family table: for each model type, its positional components and where its input parts live.

Data, not code: a new architecture of an existing scheme is one entry of :data:`FAMILIES`, a new
scheme one module of :mod:`posviz.positions` plus its entries here. Paths are attribute paths
below the base model (``model.base_model``), as transformers 5.x names them (the table "Where each
family keeps its positions" in ``docs/references.md``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from torch import nn

from posviz.hooks import Patch
from posviz.positions.alibi import AlibiSpec, bloom_alibi, falcon_alibi, mpt_alibi
from posviz.positions.axial import AxialTableSpec
from posviz.positions.base import Layers, PositionEncoding, PositionRemovalError, PositionSpec
from posviz.positions.box import BoxTableSpec
from posviz.positions.convolution import ConvPositionsSpec
from posviz.positions.learned import LearnedTableSpec, module_offset, padding_offset
from posviz.positions.none import NoPositions, NoPositionsSpec, UnknownSpec
from posviz.positions.nope import NoPESpec
from posviz.positions.patches import PatchTableSpec
from posviz.positions.relative_bias import RelativeBiasSpec, mpnet_buckets, t5_buckets, wavlm_buckets
from posviz.positions.relative_embeddings import RelativeEmbeddingsSpec
from posviz.positions.relative_sinusoid import RelativeSinusoidSpec
from posviz.positions.rotary import RotarySpec
from posviz.positions.sinks import SinkLogitsSpec
from posviz.positions.sinusoid import SinusoidBufferSpec, SinusoidSpec
from posviz.positions.unshown import ForwardBuiltSpec


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
    unread_attention: str = ""
    head_ratio: str | None = None

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
        found = []
        for spec in self.positions:
            if spec.layers and not spec.layers.of(config):
                continue  # a per-layer component no layer of this config has
            encoding = spec.read(model, config, heads=heads, max_tokens=max_tokens)
            if encoding is not None:
                encoding.layers = spec.layers.of(config) if spec.layers else None
                found.append(encoding)
        return found or [NoPositions("", 0)]

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


@dataclass(frozen=True)
class LayerScheme:
    """What gives one layer its positions, in a model that mixes schemes layer by layer (a column of
    the Model page's layer strip).

    Attributes
    ----------
    layer : int
        0-based layer index.
    components : tuple of str
        The positional components acting on it (their names, or their schemes in words).
    details : tuple of str
        One per component: what sets it apart ("base 10 000"), or empty.
    span : str
        What the layer's attention sees: "full attention", "sliding window of 512 tokens",
        "chunks of 8,192 tokens" (``config.layer_types``, ``sliding_window``, ``local_attention``,
        ``attention_chunk_size``).
    """

    layer: int
    components: tuple[str, ...]
    details: tuple[str, ...]
    span: str


def attention_span(config, layer: int) -> str:
    """What layer ``layer``'s attention sees, from ``config.layer_types`` (:attr:`LayerScheme.span`).

    ModernBERT's window is ``local_attention`` tokens in all (half on each side); causal models'
    ``sliding_window`` tokens back.
    """
    cfg = config.get_text_config()
    kind = (getattr(cfg, "layer_types", None) or ["full_attention"] * (layer + 1))[layer]
    if kind == "sliding_attention":
        window = getattr(cfg, "local_attention", None) or getattr(cfg, "sliding_window", None)
        return f"sliding window of {window:,} tokens" if window else "sliding window"
    if kind == "chunked_attention" and getattr(cfg, "attention_chunk_size", None):
        return f"chunks of {cfg.attention_chunk_size:,} tokens"
    return kind.replace("_", " ")


def layer_strip(encodings: list[PositionEncoding], config, num_layers: int) -> list[LayerScheme]:
    """Layer -> positional components and attention span, for a model whose layers differ in either
    (:attr:`PositionEncoding.layers`, :func:`attention_span`); empty where every layer is alike.

    Parameters
    ----------
    encodings : list of PositionEncoding
        The model's components (:meth:`Family.read`).
    config : transformers.PretrainedConfig
    num_layers : int

    Returns
    -------
    list of LayerScheme
        One per layer, or none.
    """
    strip = []
    for layer in range(num_layers):
        acting = [e for e in encodings if e.layers is None or layer in e.layers]
        strip.append(LayerScheme(layer, tuple(e.component or e.label for e in acting),
                                 tuple(e.layer_detail() for e in acting), attention_span(config, layer)))
    alike = len({(s.components, s.details, s.span) for s in strip}) <= 1
    return [] if alike else strip


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


# ---------------------------------------------------------------- more text families: helpers
_LONGFORMER_NOTE = ("Longformer's 4 098 rows were initialised by copying RoBERTa's 512 rows eight times: look for a "
                    "tiling of the similarity every 512 positions.")
_BOX = "embeddings.{}_position_embeddings"
_LAYOUTLM = Family((LearnedTableSpec("embeddings.position_embeddings", component="1-D positions"),
                    BoxTableSpec(_BOX.format("x"), indexed_by="the left edge x0 (and again the right edge x1) of the "
                                 "token's box", component="box x (x0, x1)"),
                    BoxTableSpec(_BOX.format("y"), indexed_by="the top edge y0 (and again the bottom edge y1) of the "
                                 "token's box", component="box y (y0, y1)"),
                    BoxTableSpec(_BOX.format("h"), indexed_by="the height y1 − y0 of the token's box",
                                 component="box height"),
                    BoxTableSpec(_BOX.format("w"), indexed_by="the width x1 − x0 of the token's box",
                                 component="box width")),
                   **_BERT_LIKE)
_FUNNEL = Family((ForwardBuiltSpec(
    source="transformers.models.funnel.modeling_funnel.FunnelAttentionStructure.get_position_embeds",
    text=("Funnel Transformer (Dai et al., 2020) adds no position to its input and stores no position table: its "
          "relative positional attention is built in every forward pass by "
          "`transformers.models.funnel.modeling_funnel.FunnelAttentionStructure.get_position_embeds`, a sinusoid of "
          "the relative positions (−2n … 2n − 1, or the factorized φ, π, ψ, ω of appendix A.2.2 where "
          "attention_type is \"factorized\"), re-gathered for the pooled positions of each block and projected "
          "by each layer's `r_kernel` with the biases `r_r_bias` (Transformer-XL style). posviz does not show "
          "it: there is no module whose values it could read, only the formula.")),),
                 token=("embeddings.word_embeddings",), layernorm="embeddings.layer_norm",
                 unread_attention=("Funnel Transformer pools the sequence between its blocks (Dai et al., 2020): "
                                   "later layers attend over fewer positions than there are tokens."))
_WINDOWED = ("it attends within a sliding window of keys, plus a few global tokens (Beltagy et al., 2020): its "
             "attention weights are given per window, not as one query × key matrix.")


def _big_bird(config) -> Family:
    if getattr(config, "rescale_embeddings", False):  # tokens scaled by sqrt(hidden) inside the forward, no module
        return Family((LearnedTableSpec("embeddings.position_embeddings"),))
    return _BERT_ARCHITECTURE


def _deberta(config) -> Family:
    relative = ((RelativeEmbeddingsSpec(layernorm=None, component="relative embeddings"),)
                if config.relative_attention else ())
    absolute = ((LearnedTableSpec("embeddings.position_embeddings", component="absolute table"),)
                if getattr(config, "position_biased_input", True) else ())
    specs = absolute + relative
    if len(specs) == 1:
        specs = (dataclasses.replace(specs[0], component=""),)
    segment = _BERT_LIKE["segment"] if config.type_vocab_size > 0 else None  # DebertaEmbeddings: None for 0 types
    return Family(specs or (NoPositionsSpec(),), **{**_BERT_LIKE, "segment": segment})
# ---------------------------------------------------------------- (end of the more text families' helpers)


_ROTARY = Family((RotarySpec(),), token=("embed_tokens", "embed_in", "word_embeddings"))
_FULL, _SLIDING = Layers("layer_types", "full_attention"), Layers("layer_types", "sliding_attention")
_ROPE_LAYERS, _NOPE_LAYERS = Layers("no_rope_layers", 1), Layers("no_rope_layers", 0)


def _global_and_local(path: str = "rotary_emb") -> tuple[RotarySpec, RotarySpec]:
    """One rotary module with a base per layer type: the global (full attention) and local (sliding
    window) layers' (``rope_parameters[layer_type]``; Gemma 3, ModernBERT)."""
    return (RotarySpec(path, layer_type="full_attention", layers=_FULL, component="global rotary"),
            RotarySpec(path, layer_type="sliding_attention", layers=_SLIDING, component="local rotary"))


def _rotary_and_nope(rotary: Layers, nope: Layers, path: str = "rotary_emb", **rotary_options) -> tuple:
    """Rotary on some layers, no positional encoding (NoPE) on the others."""
    return (RotarySpec(path, layers=rotary, component="rotary", **rotary_options),
            NoPESpec(layers=nope, component="NoPE"))


_EVERY_TWO = RotarySpec(style="interleaved", output="sin_cos_half")  # GPT-J's and CodeGen's rotate_every_two
_COHERE_ROTARY = RotarySpec(style="interleaved", output="cos_sin_repeated")  # Cohere's own rotate_half pairs (2i, 2i + 1)
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


def _reformer(config) -> Family:
    table = (AxialTableSpec("embeddings.position_embeddings") if getattr(config, "axial_pos_embds", True)
             else LearnedTableSpec("embeddings.position_embeddings.embedding"))
    return Family((table,), token=("embeddings.word_embeddings",),
                  unread_attention=("Reformer attends within chunks of keys, by locality-sensitive hashing or local "
                                    "chunks (Kitaev et al., 2020): its attention weights are per chunk, not one "
                                    "query × key matrix."))


_NO_ATTENTION = "it has no attention layers: each token mixes the ones before it through its recurrence."
_CONV = ConvPositionsSpec("encoder.pos_conv_embed")
_WAVLM_GATE = ("WavLM multiplies this bias, per head and query, by a gate computed from the query's content "
               "(a·(b·c − 1) + 2, with a and b sigmoids of the query and c learned per head: Chen et al., 2022); "
               "the gate is not shown: the bias here is the ungated one.")
_SCAN = ("This model has no positional encoding: it knows order from its recurrence, a selective state-space scan "
         "that reads the tokens one after another (Mamba: Gu and Dao, 2023; Mamba-2: Dao and Gu, 2024), and from "
         "the short causal convolution before it.")
_RWKV = ("This model has no positional encoding: it knows order from its recurrence, time mixing whose weights "
         "decay with the distance to each earlier token, and from token shift, which mixes each token with the one "
         "before it (Peng et al., 2023).")


def _falcon(config) -> Family:
    if getattr(config, "alibi", False):
        return Family((AlibiSpec(falcon_alibi, "transformers.models.falcon.modeling_falcon.build_alibi_tensor"),),
                      token=("word_embeddings",))
    return _ROTARY


def _deepseek_v3(config) -> Family:
    """Rotary on the ``qk_rope_head_dim`` part of each head; pairs (2i, 2i + 1) where ``rope_interleave``."""
    style = "interleaved" if getattr(config, "rope_interleave", False) else "rotate_half"
    return Family((RotarySpec(style=style, head_dim="qk_head_dim"),), token=("embed_tokens",))


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
    "whisper": Family((SinusoidSpec("encoder.embed_positions", layout="t2t", component="encoder"),
                       LearnedTableSpec("decoder.embed_positions", component="decoder"))),
    **{name: _ROTARY for name in (
        "llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2",
        "gpt_neox", "phi", "phi3", "olmo", "olmo2", "stablelm",
    )},
    "gptj": Family((_EVERY_TWO,), token=("wte",)),
    "cohere": Family((_COHERE_ROTARY,), token=("embed_tokens",)),
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
    "modernbert": Family(_global_and_local(), token=("embeddings.tok_embeddings",), layernorm="embeddings.norm"),
    "gemma3_text": Family(_global_and_local(), token=("embed_tokens",)),
    "gemma3": Family(_global_and_local("language_model.rotary_emb"), token=("language_model.embed_tokens",)),
    "smollm3": Family(_rotary_and_nope(_ROPE_LAYERS, _NOPE_LAYERS), token=("embed_tokens",)),
    "llama4_text": Family(_rotary_and_nope(_ROPE_LAYERS, _NOPE_LAYERS, style="interleaved", output="complex"),
                          token=("embed_tokens",)),
    "cohere2": Family(_rotary_and_nope(_SLIDING, _FULL, style="interleaved", output="cos_sin_repeated"),
                      token=("embed_tokens",)),
    "gpt_oss": Family((RotarySpec(output="cos_sin_half"), SinkLogitsSpec(component="attention sinks")),
                      token=("embed_tokens",)),
    **{name: Family((RotarySpec("language_model.rotary_emb", multimodal=True),),
                    token=("language_model.embed_tokens",)) for name in ("qwen2_vl", "qwen2_5_vl")},
    **{name: Family((RotarySpec(multimodal=True),), token=("embed_tokens",)) for name in ("qwen2_vl_text",)},
    "deepseek_v2": Family((RotarySpec(style="interleaved", output="complex", head_dim="qk_head_dim"),),
                          token=("embed_tokens",)),
    "deepseek_v3": _deepseek_v3,


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
    "wav2vec2": Family((_CONV,)),
    "hubert": Family((_CONV,)),
    "wavlm": Family((ConvPositionsSpec("encoder.pos_conv_embed", component="convolution"),
                     RelativeBiasSpec("encoder.layers.0.attention", wavlm_buckets, table="rel_attn_embed",
                                      note=_WAVLM_GATE, component="relative bias"))),
    **{name: Family((NoPositionsSpec(reason=_SCAN),), token=("embeddings",), unread_attention=_NO_ATTENTION)
       for name in ("mamba", "mamba2", "falcon_mamba")},
    "rwkv": Family((NoPositionsSpec(reason=_RWKV),), token=("embeddings",), unread_attention=_NO_ATTENTION),
    # no token path: XLNet runs time-major, its word_embedding outputs [n, batch, d], not the [batch, n, d] of
    # the input representation
    "xlnet": Family((RelativeSinusoidSpec(),)),
    "reformer": _reformer,
    "ctrl": Family((SinusoidBufferSpec("pos_encoding", layout="halves"),)),
    "xglm": Family((SinusoidSpec("embed_positions", module_offset, "weights", layout="t2t"),), token=("embed_tokens",)),

    # ---------------------------------------------------------------- more text families
    "longformer": Family((LearnedTableSpec("embeddings.position_embeddings", padding_offset, note=_LONGFORMER_NOTE),),
                         **_BERT_LIKE, unread_attention=_WINDOWED),
    "big_bird": _big_bird,
    "led": Family((LearnedTableSpec("encoder.embed_positions"),), token=("encoder.embed_tokens",),
                  layernorm="encoder.layernorm_embedding", unread_attention=_WINDOWED),
    "deberta": _deberta,
    "layoutlm": _LAYOUTLM,
    "gpt_neo": Family((LearnedTableSpec("wpe"),), token=("wte",)),
    "gpt_bigcode": Family((LearnedTableSpec("wpe"),), token=("wte",)),
    "codegen": Family((_EVERY_TWO,), token=("wte",)),
    "openai-gpt": Family((LearnedTableSpec("positions_embed"),), token=("tokens_embed",)),
    "biogpt": Family((LearnedTableSpec("embed_positions", module_offset),), token=("embed_tokens",)),
    "funnel": _FUNNEL,
    "convbert": Family((LearnedTableSpec("embeddings.position_embeddings"),), **_BERT_LIKE, head_ratio="head_ratio"),
    "mobilebert": Family((LearnedTableSpec("embeddings.position_embeddings"),),
                         **{**_BERT_LIKE, "token": ("embeddings.embedding_transformation",)}),
    "squeezebert": _BERT_ARCHITECTURE,
    "megatron-bert": Family((LearnedTableSpec("embeddings.position_embeddings"),),
                            **{**_BERT_LIKE, "layernorm": None}),
    "ernie": _BERT_ARCHITECTURE,
    "bert-generation": Family((LearnedTableSpec("embeddings.position_embeddings"),), token=("embeddings.word_embeddings",),
                              layernorm="embeddings.LayerNorm"),
    "data2vec-text": _ROBERTA,


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
