"""Bucketed relative position bias: a learned scalar per head and offset bucket (T5, mT5, MPNet, WavLM).

Raffel et al., "Exploring the Limits of Transfer Learning with a Unified Text-to-Text
Transformer" (JMLR 2020). The table and the bucket function are the model's own
(``T5Attention._relative_position_bucket`` and ``relative_attention_bias``, MPNet's
``relative_position_bucket``, WavLM's ``_relative_positions_bucket`` and ``rel_attn_embed``), so
the bias shown equals the layer's ``compute_bias``.
"""

from __future__ import annotations

import inspect

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, output_patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature

#: Offsets of the Model page's bias-by-offset figure.
SIGNATURE_OFFSETS = np.arange(-160, 161)


def t5_buckets(attention: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``T5Attention._relative_position_bucket`` bound to the layer's own settings."""
    return lambda rel: attention._relative_position_bucket(
        rel, bidirectional=not attention.is_decoder, num_buckets=attention.relative_attention_num_buckets,
        max_distance=attention.relative_attention_max_distance)


def mpnet_buckets(encoder: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``MPNetEncoder.relative_position_bucket`` with the number of buckets its forward pass uses:
    ``MPNetEncoder.forward`` calls ``compute_position_bias`` with that method's default (32 in
    transformers 5), whatever the table's size (``relative_attention_num_buckets``)."""
    used = inspect.signature(type(encoder).compute_position_bias).parameters["num_buckets"].default
    return lambda rel: encoder.relative_position_bucket(rel, num_buckets=used)


def wavlm_buckets(attention: nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    """``WavLMAttention._relative_positions_bucket``: T5's bidirectional buckets, with the layer's own
    ``num_buckets`` and ``max_distance`` (Chen et al., "WavLM", 2022)."""
    return attention._relative_positions_bucket


@dataclass
class RelativeBias(PositionEncoding):
    """A learned scalar per head and relative-position bucket, added to the attention score.

    The score of query m and key n gets ``B[bucket(n − m), h]``. Buckets are exact for small
    offsets and logarithmic beyond, up to ``max_distance``.

    Attributes
    ----------
    table : torch.Tensor
        float32 [buckets, heads], the learned bias.
    bucket_of : callable
        ``bucket_of(relative) -> buckets`` on a LongTensor of ``key − query`` offsets.
    causal : bool
        Decoder buckets (one direction only).
    note : str
        What the model does with the bias beyond adding it (the family table's words), or empty.
    """

    table: torch.Tensor = field(default=None, repr=False)
    bucket_of: Callable[[torch.Tensor], torch.Tensor] = field(default=None, repr=False)
    causal: bool = False
    note: str = ""

    scheme: ClassVar[str] = "relative_bias"
    label: ClassVar[str] = "bucketed relative position bias"
    formula: ClassVar[str] = r"\mathrm{score}_h(m, n) = q_m \cdot k_n + B\big[\mathrm{bucket}(n - m),\, h\big]"
    has_bias: ClassVar[bool] = True

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

    @property
    def used_buckets(self) -> int:
        """How many of the table's rows the model adds for some offset within its positions (the rest
        are learned parameters the forward pass never reads)."""
        reach = max(self.num_positions - 1, 1)
        return int(np.unique(self.buckets(np.arange(-reach, reach + 1))).size)

    def describe(self) -> str:
        direction = "one direction (decoder: keys up to the query)" if self.causal else "both directions"
        rows, used = self.table.shape[0], self.used_buckets
        unread = "the other row is" if rows - used == 1 else f"the other {rows - used} are"
        unused = (f" The table has {rows} rows, but the model's forward pass adds only {used} of them: {unread} "
                  "never used, and not shown." if used < rows else "")
        return (f"Bucketed relative position bias (T5: Raffel et al., 2020): no position vector; each head "
                f"adds a learned scalar B[bucket(n − m), h] to the score of query m and key n. "
                f"{used} buckets over {direction}: offsets below a few positions get a bucket "
                f"each, longer ones share logarithmic buckets. From `{self.source}`.{unused}"
                + (f" {self.note}" if self.note else ""))

    def signature(self) -> Signature:
        values = self.by_offset(SIGNATURE_OFFSETS)
        return Signature(f"Relative bias by offset ({self.component or 'self-attention'})", "key − query offset",
                         "bias", "bias", {f"head {h}": values[h] for h in range(values.shape[0])}, x=SIGNATURE_OFFSETS,
                         x_name="offsets")


@dataclass(frozen=True)
class RelativeBiasSpec(PositionSpec):
    """A bucketed relative bias held by one attention module (an ``nn.Embedding`` below ``path``).

    Attributes
    ----------
    path : str
        The module that owns the table and the bucket function (T5's first self-attention of a
        stack, reused by every layer; MPNet's encoder; WavLM's first attention).
    buckets : callable
        ``buckets(module) -> bucket_of``: the family's bucket function bound to the module.
    table : str
        Attribute of the module that holds the table [buckets, heads] (WavLM: ``rel_attn_embed``).
    note : str
        What the model does with the bias beyond adding it, shown in the description (WavLM's gate).
    """

    path: str
    buckets: Callable[[nn.Module], Callable[[torch.Tensor], torch.Tensor]]
    table: str = "relative_attention_bias"
    note: str = ""

    encoding: ClassVar[type[PositionEncoding]] = RelativeBias

    @property
    def table_path(self) -> str:
        """Path of the bias table (an ``nn.Embedding`` [buckets, heads])."""
        return f"{self.path}.{self.table}"

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> RelativeBias | None:
        module = resolve(model, self.path)
        if module is None:
            return None
        table = getattr(module, self.table).weight.detach().to(torch.float32)
        return RelativeBias(self.table_path, max_tokens, heads=int(table.shape[1]), table=table,
                            bucket_of=self.buckets(module), causal=bool(getattr(module, "is_decoder", False)),
                            note=self.note, component=self.component)

    def modules(self) -> tuple[str, ...]:
        return (self.table_path,)

    def removal(self, model: nn.Module) -> list[Patch]:
        return output_patch(model, self.table_path, f"`{self.table_path}` output set to 0 (relative bias 0)", torch.zeros_like)
