"""Relative schemes: bucketed relative bias (T5, MPNet) and relative embeddings (DeBERTa)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from posviz.positions.base import PositionEncoding


@dataclass
class RelativeBias(PositionEncoding):
    """A learned scalar per head and relative-position bucket, added to the attention score.

    The score of query m and key n gets ``B[bucket(n − m), h]`` (Raffel et al., "Exploring the
    Limits of Transfer Learning", JMLR 2020). Buckets are exact for small offsets and
    logarithmic beyond, up to ``max_distance``; the bucket function and the table are the model's
    own (``T5Attention._relative_position_bucket`` and ``relative_attention_bias``, MPNet's
    ``relative_position_bucket``), so this equals the layer's ``compute_bias``.

    Attributes
    ----------
    table : torch.Tensor
        float32 [buckets, heads], the learned bias.
    bucket_of : callable
        ``bucket_of(relative) -> buckets`` on a LongTensor of ``key − query`` offsets.
    causal : bool
        Decoder buckets (one direction only).
    """

    table: torch.Tensor = None
    bucket_of: Callable[[torch.Tensor], torch.Tensor] = None
    causal: bool = False

    kind = "bias"

    formula = r"\mathrm{score}_h(m, n) = q_m \cdot k_n + B\big[\mathrm{bucket}(n - m),\, h\big]"

    def buckets(self, offsets: np.ndarray) -> np.ndarray:
        """The bucket of each ``key − query`` offset, int64, same shape as ``offsets``."""
        rel = torch.as_tensor(np.asarray(offsets), dtype=torch.long, device=self.table.device)
        return self.bucket_of(rel).cpu().numpy()

    def by_offset(self, offsets: np.ndarray) -> np.ndarray:
        """float32 [heads, len(offsets)]: the bias of each head at each ``key − query`` offset."""
        return self.table[torch.as_tensor(self.buckets(offsets), device=self.table.device)].T.cpu().numpy()

    def bias(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions)
        relative = positions[None, :] - positions[:, None]  # key - query
        values = self.table[torch.as_tensor(self.buckets(relative), device=self.table.device)]  # [n, n, heads]
        out = values.permute(2, 0, 1).cpu().numpy().astype(np.float32)
        if self.causal:
            out[:, relative > 0] = np.nan
        return out

    def describe(self) -> str:
        direction = "one direction (decoder: keys up to the query)" if self.causal else "both directions"
        return (f"Bucketed relative position bias (T5: Raffel et al., 2020): no position vector; each head "
                f"adds a learned scalar B[bucket(n − m), h] to the score of query m and key n. "
                f"{self.table.shape[0]} buckets over {direction}: offsets below a few positions get a bucket "
                f"each, longer ones share logarithmic buckets. From `{self.source}`.")


@dataclass
class RelativeEmbeddings(PositionEncoding):
    """DeBERTa's relative position embeddings: a vector per relative-position bucket.

    DeBERTa (He et al., ICLR 2021) adds no position to its input; its disentangled attention
    scores content against relative positions (c2p, p2c) using ``rel_embeddings`` (after the
    encoder's LayerNorm where ``norm_rel_ebd`` says so), indexed by ``bucket(m − n) + span``
    (``make_log_bucket_position``). Row r here is bucket ``r − span``.

    Attributes
    ----------
    tensor : torch.Tensor
        float32 [2·span, hidden], from the encoder's own ``get_rel_embedding()``.
    """

    tensor: torch.Tensor = None

    formula = (r"A_{m,n} = Q^c_m K^{c\top}_n + Q^c_m K^{r\top}_{\delta(m,n)} + "
               r"K^c_n Q^{r\top}_{\delta(n,m)}")

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        return self.tensor[torch.as_tensor(np.asarray(positions), device=self.tensor.device)]

    def describe(self) -> str:
        span = self.num_positions // 2
        return (f"Relative position embeddings (DeBERTa: He et al., ICLR 2021): no position is added to the input; "
                f"attention compares content with {self.num_positions} relative-position vectors (buckets "
                f"−{span} … {span - 1}) in every layer. Rows here are those vectors (from `{self.source}`); their "
                "similarity shows how the model relates distances.")
