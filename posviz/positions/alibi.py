"""ALiBi: a linear, per-head bias on the attention score (Press, Smith & Lewis, ICLR 2022).

The slopes come from each family's own builder (BLOOM's ``build_alibi_tensor``, MPT's
``build_mpt_alibi_tensor``, Falcon's), never from a copy of the formula; the formula is shown
beside them and the tests check that both agree (``docs/references.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec, Signature


def bloom_alibi(config, heads: int, n: int) -> torch.Tensor:
    """``transformers.models.bloom.modeling_bloom.build_alibi_tensor`` for keys 0 .. n-1: [heads, n]."""
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    return build_alibi_tensor(torch.ones(1, n), heads, torch.float32).reshape(heads, n)


def falcon_alibi(config, heads: int, n: int) -> torch.Tensor:
    """``transformers.models.falcon.modeling_falcon.build_alibi_tensor`` × 2 / √head_dim: [heads, n].

    Falcon's eager attention adds the builder's tensor to the raw scores before the 1/√head_dim
    scaling, and again, already scaled, through the causal mask (``FalconModel.forward``): the
    scaled scores get 2 / √head_dim times the builder's bias. BLOOM and MPT add it once, unscaled.
    """
    from transformers.models.falcon.modeling_falcon import build_alibi_tensor

    head_dim = config.hidden_size // heads
    return build_alibi_tensor(torch.ones(1, n), heads, torch.float32).reshape(heads, n) * (2 / head_dim ** 0.5)


def mpt_alibi(config, heads: int, n: int) -> torch.Tensor:
    """``transformers.models.mpt.modeling_mpt.build_mpt_alibi_tensor`` for keys 0 .. n-1: [heads, n]."""
    from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

    return build_mpt_alibi_tensor(heads, n, config.attn_config.alibi_bias_max).reshape(heads, n).float()


@dataclass
class AlibiBias(PositionEncoding):
    """The per-head slopes of ALiBi and the bias they add.

    The score of query m and key n ≤ m gets ``−slope_h · (m − n)`` (Press, Smith & Lewis, "Train
    Short, Test Long", ICLR 2022); keys after the query are masked (NaN here). The slopes are read
    from the model's own builder, which adds ``slope_h · n`` instead: the same scores up to a
    constant per row, which softmax removes.

    Attributes
    ----------
    slopes : np.ndarray
        float64 [heads].
    """

    slopes: np.ndarray = None

    scheme: ClassVar[str] = "alibi"
    label: ClassVar[str] = "ALiBi (attention with linear biases)"
    formula: ClassVar[str] = r"\mathrm{score}_h(m, n) = q_m \cdot k_n - \mathrm{slope}_h\,(m - n),\quad n \le m"
    has_bias: ClassVar[bool] = True

    def bias(self, positions: np.ndarray) -> np.ndarray:
        positions = np.asarray(positions)
        offset = positions[:, None] - positions[None, :]  # m - n
        out = -self.slopes[:, None, None] * offset[None]
        out[:, offset < 0] = np.nan
        return out.astype(np.float32)

    def describe(self) -> str:
        shown = ", ".join(f"{s:.4g}" for s in self.slopes[:8]) + (" …" if len(self.slopes) > 8 else "")
        return (f"ALiBi (Press et al., ICLR 2022): no position vector at all; each head h subtracts "
                f"slope_h × (m − n) from the score of query m and key n, a penalty growing linearly with "
                f"distance. {len(self.slopes)} heads, slopes {shown} (from `{self.source}`). "
                "Heads with small slopes look far, heads with large slopes look near.")

    def signature(self) -> Signature:
        return Signature("ALiBi slope of each head", "head", "slope", "slope", {"slope": self.slopes}, x_name="heads",
                         log_y=True, markers=True)


@dataclass(frozen=True)
class AlibiSpec(PositionSpec):
    """ALiBi built by a function of the family (no module holds it).

    Attributes
    ----------
    builder : callable
        ``builder(config, heads, n) -> Tensor [heads, n]``: the model's own ALiBi tensor for keys
        0 .. n-1 (slope × key position, up to a constant per row).
    source : str
        The builder's name in transformers, for the UI.
    """

    builder: Callable[..., torch.Tensor]
    source: str

    encoding: ClassVar[type[PositionEncoding]] = AlibiBias

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> AlibiBias:
        row = self.builder(config, heads, 2).double()
        return AlibiBias(self.source, max_tokens, heads=heads, slopes=(row[:, 1] - row[:, 0]).numpy(),
                         component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        raise PositionRemovalError(
            f"ALiBi's linear bias is built by a function ({self.source.rsplit('.', 1)[-1]}) or inside the model's "
            "forward, not by a submodule, so a forward hook cannot remove it and posviz does not patch library "
            "code. Its word order can still be compared with positions.")
