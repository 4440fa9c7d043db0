"""Rotary position embedding (RoPE): what a position is, and the content-free kernel."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from posviz.positions.base import PositionEncoding


@dataclass
class RotaryEncoding(PositionEncoding):
    """The rotation a model's rotary module applies at each position.

    A position p rotates each pair of query/key dimensions i by the angle ``p·θ_i`` (Su et al.,
    "RoFormer", 2021). Its vector here is the rotation's features ``[cos(p·θ), sin(p·θ)]`` (times
    the module's ``attention_scaling``), read from the model's own rotary module, so base,
    scaling (linear, dynamic, YaRN, Llama 3 …) and partial rotary are what the model uses. Their
    dot product is the content-free kernel ``K(m, n) = Σ_i cos((m − n)·θ_i)``.

    Attributes
    ----------
    module : torch.nn.Module
        The model's rotary module (``rotary_emb``).
    style : {"rotate_half", "interleaved"}
        Pairs (i, i + d/2) as in Llama's ``rotate_half``, or (2i, 2i + 1) as in GPT-J's
        ``rotate_every_two``.
    head_dim : int
        Dimensions per head; the rotation covers ``rotary_dim`` of them.
    theta : float or None
        The base from the config (``rope_parameters["rope_theta"]``), for the description.
    rope_type : str
        The module's ``rope_type`` (``"default"``, ``"linear"``, ``"llama3"``, ``"yarn"`` …).
    """

    module: nn.Module = None
    style: str = "rotate_half"
    head_dim: int = 0
    theta: float | None = None
    rope_type: str = "default"

    formula = (r"q'_m = q_m \cos(m\theta) + \mathrm{rotate}(q_m)\sin(m\theta),\quad "
               r"K(m, n) = \sum_i \cos\big((m - n)\,\theta_i\big),\quad \theta_i = b^{-2i/d}")

    def _cos_sin(self, positions: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin of ``p·θ_i`` for each position, float32 [n, rotary_dim / 2] each."""
        device = next(self.module.buffers()).device
        ids = torch.as_tensor(np.asarray(positions), dtype=torch.long, device=device)[None, :]
        probe = torch.zeros(1, dtype=torch.float32, device=device)
        with torch.no_grad():
            if self.style == "interleaved":  # GPTJRotaryEmbedding returns (sin, cos), half width each
                sin, cos = self.module(probe, ids)
            else:  # LlamaRotaryEmbedding & co. return (cos, sin) of cat(freqs, freqs)
                cos, sin = self.module(probe, ids)
                half = cos.shape[-1] // 2
                cos, sin = cos[..., :half], sin[..., :half]
        return cos[0].to(torch.float32), sin[0].to(torch.float32)

    @property
    def rotary_dim(self) -> int:
        """Dimensions per head that are rotated (``head_dim`` times the partial factor)."""
        return 2 * self._cos_sin(np.array([0]))[0].shape[-1]

    @property
    def frequencies(self) -> np.ndarray:
        """θ_i in radians per position, float64 [rotary_dim / 2], fastest first, as the module
        computes them (the angle of position 1)."""
        cos, sin = self._cos_sin(np.array([1]))
        return np.arctan2(sin[0].double().cpu().numpy(), cos[0].double().cpu().numpy())

    def vectors(self, positions: np.ndarray, band: slice | None = None) -> torch.Tensor:
        """Rotation features ``[cos(p·θ_i), sin(p·θ_i)]``, float32 [n, 2·k] for the k frequencies
        in ``band`` (all by default); their dot products are the kernel restricted to the band."""
        cos, sin = self._cos_sin(positions)
        if band is not None:
            cos, sin = cos[:, band], sin[:, band]
        return torch.cat([cos, sin], dim=-1)

    def describe(self) -> str:
        pairs = "(i, i + d/2), Llama's rotate_half" if self.style == "rotate_half" else "(2i, 2i + 1), GPT-J's rotate_every_two"
        base = f"base b = {self.theta:g}" if self.theta else "the module's own frequencies"
        partial = (f"the first {self.rotary_dim} of {self.head_dim} dimensions per head"
                   if self.head_dim and self.rotary_dim < self.head_dim else f"all {self.rotary_dim} dimensions per head")
        return (f"Rotary position embedding (Su et al., RoFormer, 2021): no vector is added to the input; "
                f"queries and keys of every layer are rotated by p·θ_i in pairs {pairs}, over {partial}; "
                f"{base}, scaling '{self.rope_type}'. The score of query m and key n then depends on m − n only "
                "through the rotations; with content removed it is the kernel K(m, n) = Σ_i cos((m − n)·θ_i), "
                f"shown here. Values come from `{self.source}` ({type(self.module).__name__}).")
