"""Every positional scheme in the form that is true for it.

:func:`position_encodings` reads a loaded model through the registry (:mod:`posviz.schemes`)
and returns one :class:`PositionEncoding` per positional component: a table of position vectors
(learned or sinusoidal), a rotary module, ALiBi slopes, a bucketed relative bias (per stack),
DeBERTa's relative embeddings, or nothing.
"""

from __future__ import annotations

import numpy as np
import torch

from posviz.loading import LoadedModel
from posviz.positions.alibi import AlibiBias
from posviz.positions.base import NoPositions, PositionEmbeddings, PositionEncoding
from posviz.positions.relative import RelativeBias, RelativeEmbeddings
from posviz.positions.rotary import RotaryEncoding
from posviz.positions.sinusoid import sinusoidal
from posviz.schemes import ALIBI, RELATIVE_BIAS, RELATIVE_EMBEDDINGS, SINUSOIDAL, position_table, resolve

__all__ = [
    "AlibiBias", "NoPositions", "PositionEmbeddings", "PositionEncoding", "RelativeBias", "RelativeEmbeddings",
    "RotaryEncoding", "position_embeddings", "position_encodings", "sinusoidal",
]


def _table(lm: LoadedModel) -> PositionEmbeddings | None:
    found = position_table(lm.model, lm.layout)
    if found is None:
        return None
    table, offset = found
    with torch.no_grad():
        tensor = table[offset:].detach().to(torch.float32)
    layout = lm.layout
    return PositionEmbeddings(SINUSOIDAL if layout.sinusoid else lm.scheme, layout.position, int(tensor.shape[0]),
                              tensor=tensor, offset=offset, sinusoid=layout.sinusoid,
                              component="absolute table" if layout.relative_bias else "")


def _rotary(lm: LoadedModel) -> RotaryEncoding | None:
    module = resolve(lm.model, lm.layout.rotary) if lm.layout.rotary else None
    if module is None:
        return None
    cfg = lm.config.get_text_config()
    rope = getattr(cfg, "rope_parameters", None) or {}
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // lm.num_heads
    return RotaryEncoding(lm.scheme, lm.layout.rotary, lm.max_tokens, module=module, style=lm.layout.rotary_style,
                          head_dim=int(head_dim), theta=rope.get("rope_theta"),
                          rope_type=getattr(module, "rope_type", rope.get("rope_type", "default")))


def _alibi(lm: LoadedModel) -> AlibiBias:
    heads = lm.num_heads
    row = lm.layout.alibi(lm.config, heads, 2).double()
    slopes = (row[:, 1] - row[:, 0]).numpy()
    return AlibiBias(ALIBI, lm.layout.alibi.__doc__.splitlines()[0], lm.max_tokens,
                     heads=heads, slopes=slopes)


def _relative_biases(lm: LoadedModel) -> list[RelativeBias]:
    found = []
    for path in lm.layout.relative_bias:
        module = resolve(lm.model, path)
        if module is None:
            continue
        table = module.relative_attention_bias.weight.detach().to(torch.float32)
        stack = path.split(".")[0]
        found.append(RelativeBias(
            RELATIVE_BIAS, f"{path}.relative_attention_bias", lm.max_tokens, heads=int(table.shape[1]),
            table=table, bucket_of=lm.layout.buckets(module), causal=bool(getattr(module, "is_decoder", False)),
            component=("relative bias" if lm.layout.position else stack)))
    return found


def _relative_embeddings(lm: LoadedModel) -> RelativeEmbeddings | None:
    encoder = resolve(lm.model, lm.layout.relative_embeddings) if lm.layout.relative_embeddings else None
    if encoder is None:
        return None
    with torch.no_grad():
        tensor = encoder.get_rel_embedding().detach().to(torch.float32)
    rows = int(tensor.shape[0])
    return RelativeEmbeddings(RELATIVE_EMBEDDINGS, f"{lm.layout.relative_embeddings}.get_rel_embedding()", rows,
                              tensor=tensor, axis_label="relative position bucket", first_label=-(rows // 2))


def position_encodings(lm: LoadedModel) -> list[PositionEncoding]:
    """Every positional component of a model, each in the form that is true for its scheme.

    Parameters
    ----------
    lm : LoadedModel

    Returns
    -------
    list of PositionEncoding
        Usually one; two for MPNet (absolute table and relative bias) and T5 (encoder and decoder
        relative bias). A model without positional information posviz knows gives
        ``[NoPositions]``.
    """
    found: list[PositionEncoding] = []
    table = _table(lm)
    if table is not None:
        found.append(table)
    rotary = _rotary(lm)
    if rotary is not None:
        found.append(rotary)
    if lm.layout.alibi is not None:
        found.append(_alibi(lm))
    found.extend(_relative_biases(lm))
    relative = _relative_embeddings(lm)
    if relative is not None:
        found.append(relative)
    return found or [NoPositions(lm.scheme, lm.family, 0)]


def position_embeddings(lm: LoadedModel) -> PositionEncoding:
    """The model's main positional encoding (the first of :func:`position_encodings`).

    Returns
    -------
    PositionEncoding
        :class:`PositionEmbeddings` (``.matrix`` numpy float32 [num_positions, width], row p =
        the vector added at 0-based position p, family offset removed; ``.offset``; ``.source``)
        for learned and sinusoidal tables; :class:`RotaryEncoding` (frequencies, kernel through
        ``vectors``); :class:`AlibiBias` (slopes, ``bias``); :class:`RelativeBias` (table,
        ``buckets``, ``by_offset``, ``bias``); :class:`RelativeEmbeddings`; or
        :class:`NoPositions`. Each has ``.scheme``, ``.source`` and ``.describe()``.
    """
    return position_encodings(lm)[0]
