"""Axial position embeddings: a learned table of H × W positions stored as two factor tables (Reformer).

Kitaev et al., "Reformer: The Efficient Transformer" (ICLR 2020). ``AxialPositionEmbeddings`` holds
``weights[0]`` [H, 1, d₀] and ``weights[1]`` [1, W, d₁] (``config.axial_pos_shape`` = (H, W),
``config.axial_pos_embds_dim`` = (d₀, d₁), d₀ + d₁ = hidden size); its forward broadcasts both to
the grid [H, W], concatenates them and reads the grid row by row, so position p = h·W + w gets
``[F₀[h] ‖ F₁[w]]``. H·W positions (65 536 for enwik8) from (H + W) stored rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, output_patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature

#: Most positions the Model page's norm-by-position figure draws (every k-th beyond).
SIGNATURE_POINTS = 4096


@dataclass
class AxialEmbeddings(PositionEncoding):
    """A learned position table held as two factors: position p = h·W + w gets [F₀[h] ‖ F₁[w]].

    The rows are indexed from the factors (never the whole table in memory, 512 MB for the
    524 288 positions of ``google/reformer-crime-and-punishment``); they equal what the module adds
    at each position (tests/test_families_speech.py).

    Attributes
    ----------
    factors : tuple of torch.Tensor
        float32 (F₀ [H, d₀], F₁ [W, d₁]) on the model's device: the module's ``weights``, squeezed.
    """

    factors: tuple[torch.Tensor, torch.Tensor] = field(default=None, repr=False)

    scheme: ClassVar[str] = "axial"
    label: ClassVar[str] = "axial position embeddings (learned, two factor tables)"
    formula: ClassVar[str] = (r"x_p = E_{\mathrm{token}}[t_p] + \big[F_0[\lfloor p / W \rfloor] \,\Vert\, "
                              r"F_1[p \bmod W]\big]")
    has_vectors: ClassVar[bool] = True
    metric_names: ClassVar[dict[str, str]] = {"dot": "dot product P·Pᵀ", "cosine": "of unit vectors"}

    @property
    def shape(self) -> tuple[int, int]:
        """(H, W): the grid of positions (``config.axial_pos_shape``)."""
        return int(self.factors[0].shape[0]), int(self.factors[1].shape[0])

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        p = torch.as_tensor(np.asarray(positions), device=self.factors[0].device)
        row, column = torch.div(p, self.shape[1], rounding_mode="floor"), p % self.shape[1]
        return torch.cat([self.factors[0][row], self.factors[1][column]], dim=-1)

    def describe(self) -> str:
        (h, w), (d0, d1) = self.shape, (int(f.shape[1]) for f in self.factors)
        return (f"Axial position embeddings (Reformer: Kitaev et al., 2020), learned: the {self.num_positions:,} "
                f"positions form a grid of {h} rows × {w} columns, and position p = row·{w} + column gets the "
                f"concatenation of a row vector ({d0} dims, {h} of them) and a column vector ({d1} dims, {w} of them). "
                f"So positions in the same row share their first {d0} dims, positions {w} apart their last {d1}; "
                f"{h + w} stored vectors stand for {h * w:,} positions. From `{self.source}`.")

    def signature(self) -> Signature:
        step = max(1, -(-self.num_positions // SIGNATURE_POINTS))
        positions = np.arange(0, self.num_positions, step)
        norms = torch.linalg.vector_norm(self.vectors(positions), dim=1).cpu().numpy()
        every = f" (every {step}th)" if step > 1 else ""
        return Signature(f"Length of each position embedding{every}", "position p", "L2 norm", "norm",
                         {"‖position embedding‖": norms}, x=positions,
                         caption=f"‖P_p‖² = ‖row vector‖² + ‖column vector‖²: a pattern that repeats "
                                 f"every {self.shape[1]} positions, shifted at each new row.")


@dataclass(frozen=True)
class AxialTableSpec(PositionSpec):
    """Axial position embeddings held by one module (``AxialPositionEmbeddings``, its ``weights``).

    Attributes
    ----------
    path : str
        Path of the module whose output is added to the token embeddings.
    """

    path: str = "embeddings.position_embeddings"

    encoding: ClassVar[type[PositionEncoding]] = AxialEmbeddings

    @property
    def input_path(self) -> str:
        return self.path

    def _factors(self, model: nn.Module) -> tuple[torch.Tensor, torch.Tensor] | None:
        module = resolve(model, self.path)
        weights = getattr(module, "weights", None)
        if weights is None or len(weights) != 2:  # absent, or Reformer's plain PositionEmbeddings
            return None
        first, second = (w.detach().to(torch.float32) for w in weights)
        return first.reshape(first.shape[0], -1), second.reshape(second.shape[1], -1)

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> AxialEmbeddings | None:
        factors = self._factors(model)
        if factors is None:
            return None
        return AxialEmbeddings(self.path, int(factors[0].shape[0] * factors[1].shape[0]), factors=factors,
                               component=self.component)

    def table_positions(self, model: nn.Module) -> int | None:
        factors = self._factors(model)
        return None if factors is None else int(factors[0].shape[0] * factors[1].shape[0])

    def modules(self) -> tuple[str, ...]:
        return (self.path,)

    def removal(self, model: nn.Module) -> list[Patch]:
        return output_patch(model, self.path, f"`{self.path}` output set to 0 (no position vector added)", torch.zeros_like)
