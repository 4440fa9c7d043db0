"""Relative position embeddings: a vector per relative position (DeBERTa v1) or bucket (DeBERTa v2/v3).

He et al., "DeBERTa: Decoding-enhanced BERT with Disentangled Attention" (ICLR 2021).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, resolve
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec, Signature


@dataclass
class RelativeEmbeddings(PositionEncoding):
    """DeBERTa's relative position embeddings: a vector per relative-position bucket.

    DeBERTa adds no position to its input (v1 only where ``position_biased_input`` is set); its
    disentangled attention scores content against relative positions (c2p, p2c) using
    ``rel_embeddings`` (v2: after the encoder's LayerNorm where ``norm_rel_ebd`` says so), indexed
    by ``bucket(m − n) + span`` (v2: ``make_log_bucket_position``; v1: ``m − n`` itself, clipped to
    the span). Row r here is bucket ``r − span``.

    Attributes
    ----------
    tensor : torch.Tensor
        float32 [2·span, hidden], from the encoder's own ``get_rel_embedding()``.
    """

    tensor: torch.Tensor = field(default=None, repr=False)

    scheme: ClassVar[str] = "relative_embeddings"
    label: ClassVar[str] = "relative position embeddings (DeBERTa)"
    formula: ClassVar[str] = (r"A_{m,n} = Q^c_m K^{c\top}_n + Q^c_m K^{r\top}_{\delta(m,n)} + "
                              r"K^c_n Q^{r\top}_{\delta(n,m)}")
    has_vectors: ClassVar[bool] = True
    vector_name: ClassVar[str] = "relative embeddings"
    metric_names: ClassVar[dict[str, str]] = {"dot": "dot product P·Pᵀ", "cosine": "of unit vectors"}

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        return self.tensor[torch.as_tensor(np.asarray(positions), device=self.tensor.device)]

    def describe(self) -> str:
        span = self.num_positions // 2
        return (f"Relative position embeddings (DeBERTa: He et al., ICLR 2021): no position is added to the input "
                "(but by DeBERTa v1 where position_biased_input is set: its absolute table, shown apart); "
                f"attention compares content with {self.num_positions} relative-position vectors (buckets "
                f"−{span} … {span - 1}) in every layer. Rows here are those vectors (from `{self.source}`); their "
                "similarity shows how the model relates distances.")

    def signature(self) -> Signature:
        norms = np.linalg.norm(self.tensor.cpu().numpy(), axis=1)
        return Signature("Length of each relative embedding", "relative position bucket", "L2 norm", "norm",
                         {"‖relative embedding‖": norms}, x=self.first_label + np.arange(len(norms)), x_name="buckets")


@dataclass(frozen=True)
class RelativeEmbeddingsSpec(PositionSpec):
    """DeBERTa's relative embeddings, read through the encoder's own ``get_rel_embedding()``.

    Attributes
    ----------
    path : str
        Path of the encoder (``DebertaV2Encoder``, ``DebertaEncoder``).
    layernorm : str or None
        Attribute of the encoder holding the LayerNorm ``get_rel_embedding()`` applies (DeBERTa
        v2's, where ``norm_rel_ebd`` says so); None for DeBERTa v1, whose encoder has none.
    """

    path: str = "encoder"
    layernorm: str | None = "LayerNorm"

    encoding: ClassVar[type[PositionEncoding]] = RelativeEmbeddings

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> RelativeEmbeddings | None:
        encoder = resolve(model, self.path)
        if encoder is None:
            return None
        with torch.no_grad():
            tensor = encoder.get_rel_embedding().detach().to(torch.float32)
        rows = int(tensor.shape[0])
        return RelativeEmbeddings(f"{self.path}.get_rel_embedding()", rows, tensor=tensor,
                                  axis_label="relative position bucket", first_label=-(rows // 2),
                                  component=self.component)

    def modules(self) -> tuple[str, ...]:
        norm = (f"{self.path}.{self.layernorm}",) if self.layernorm else ()
        return (f"{self.path}.rel_embeddings", *norm)

    def removal(self, model: nn.Module) -> list[Patch]:
        raise PositionRemovalError(
            "DeBERTa reads its relative position embeddings as a weight (get_rel_embedding()), not through a "
            "module call, and uses them in two attention terms (c2p, p2c): no forward hook removes them cleanly. "
            "Its word order can still be compared with positions.")
