"""Relative sinusoidal encoding: a fixed sinusoid per relative distance, built in the forward (XLNet).

Dai et al., "Transformer-XL" (ACL 2019), and Yang et al., "XLNet" (NeurIPS 2019): no position is
added to the input; every layer scores query i against key j with content terms and a term
``(q_i + r) · W_r R_{i−j}``, where ``R_d`` is the sinusoid of the distance ``d = i − j``. XLNet
builds R in ``XLNetModel.relative_positional_encoding`` at every forward pass (no table, no module).
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
class RelativeSinusoid(PositionEncoding):
    """A fixed sinusoid per query − key distance, as the model's own method builds it.

    Row r is the vector of distance ``r + first_label``, ``first_label = −(n − 1)``: the distances
    −(n − 1) … n − 1 of n tokens, in increasing order.

    Attributes
    ----------
    tensor : torch.Tensor
        float32 [2n − 1, d_model] on the model's device (the CPU after a positions-only load).
    clamp_len : int
        Distances beyond it share its vector (``config.clamp_len``; ≤ 0: none).
    """

    tensor: torch.Tensor = field(default=None, repr=False)
    clamp_len: int = -1

    scheme: ClassVar[str] = "relative_sinusoid"
    label: ClassVar[str] = "relative sinusoidal encoding (Transformer-XL)"
    formula: ClassVar[str] = (r"A_{i,j} = (q_i + u)\cdot k_j + (q_i + v)\cdot W_R\, R_{i-j},\quad "
                              r"R_d = \big[\sin(d\,\omega_k)\big]_k \Vert \big[\cos(d\,\omega_k)\big]_k")
    has_vectors: ClassVar[bool] = True
    vector_name: ClassVar[str] = "relative position encodings"
    metric_names: ClassVar[dict[str, str]] = {"dot": "dot product P·Pᵀ", "cosine": "of unit vectors"}

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        return self.tensor[torch.as_tensor(np.asarray(positions), device=self.tensor.device)]

    def describe(self) -> str:
        reach = -self.first_label
        clamp = (f" Distances beyond ±{self.clamp_len} share one vector (clamp_len)." if self.clamp_len > 0 else "")
        return (f"Relative sinusoidal encoding (Transformer-XL: Dai et al., 2019; XLNet: Yang et al., 2019): nothing "
                "is added to the input. Every layer scores query i against key j with a content term and a "
                "position term that reads a fixed sinusoid R of the distance i − j (all sines, then all cosines, "
                f"frequencies 10000^(−2k/d)), projected by the layer's W_R. Rows here are R for the distances "
                f"−{reach} … {reach} (query − key) of {reach + 1} tokens, as `{self.source}` builds it at every "
                f"forward pass.{clamp}")

    def signature(self) -> Signature:
        values = self.tensor.double()
        zero = values[-self.first_label]
        curve = (values @ zero).cpu().numpy().astype(np.float32)
        x = self.first_label + np.arange(len(curve))
        return Signature("How alike each distance's vector is to distance 0's", "query − key distance",
                         "R_d · R_0", "dot", {"R_d · R_0": curve}, x=x, x_name="distances",
                         caption="A fixed sinusoid: the dot product depends on |d| only, largest at 0.")


@dataclass(frozen=True)
class RelativeSinusoidSpec(PositionSpec):
    """XLNet's relative sinusoid, read by calling the model's own ``relative_positional_encoding``.

    Attributes
    ----------
    method : str
        The base model's method that builds it (``relative_positional_encoding(qlen, klen)``,
        [qlen + klen, 1, d_model], distances ``klen`` down to ``−qlen + 1``).
    """

    method: str = "relative_positional_encoding"

    encoding: ClassVar[type[PositionEncoding]] = RelativeSinusoid

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> RelativeSinusoid | None:
        build = resolve(model, self.method)
        if build is None:
            return None
        n = max_tokens
        # where the model's weights are (the CPU after a positions-only load: the method needs none of them)
        device = next((p.device for p in model.parameters() if p.device.type != "meta"), torch.device("cpu"))
        with torch.no_grad():
            rows = build(n, n, bsz=None, device=device)[:, 0, :]  # distances n … −n + 1
        # the distance n (row 0) is never read: rel_shift gives query i and key j the row of i − j
        tensor = rows[1:].flip(0).detach().to(torch.float32)
        return RelativeSinusoid(f"{type(model).__name__}.{self.method}()", int(tensor.shape[0]), tensor=tensor,
                                clamp_len=int(getattr(config, "clamp_len", -1) or -1),
                                axis_label="relative position", first_label=-(n - 1), component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        """No patch can remove it.

        Raises
        ------
        PositionRemovalError
            Always: the encoding is built by a method in the forward, not output by a module.
        """
        raise PositionRemovalError("This model builds its relative sinusoid by a method call inside its forward "
                                   f"({self.method}), not through a module, so no forward hook can take it out.")
