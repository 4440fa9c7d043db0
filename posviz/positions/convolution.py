"""Convolutional positional embedding: order from a convolution over the features, no table (wav2vec 2.0 & kin).

Mohamed et al., "Transformers with convolutional context for ASR" (2019) replaced position
embeddings by convolutions; Baevski et al., "wav2vec 2.0" (NeurIPS 2020) adds the output of one
grouped ``Conv1d`` of width k (128 in the base models, weight-normalised over each tap) to the
features before the first layer (``Wav2Vec2PositionalConvEmbedding``, HuBERT's and WavLM's copies).
There is no vector per position and no score bias: what a frame gets depends on its neighbours'
content, within k frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, output_patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature


def tap_offsets(kernel_size: int) -> np.ndarray:
    """The frame offset each tap of the positional convolution reads, int64 [kernel_size].

    The convolution is padded by ``k // 2`` on both sides and, for an even ``k``, its last output
    frame is dropped (``Wav2Vec2SamePadLayer``), so output frame i reads input frames
    ``i + t − k // 2`` for taps t = 0 .. k − 1.

    Examples
    --------
    >>> tap_offsets(4).tolist(), tap_offsets(3).tolist()
    ([-2, -1, 0, 1], [-1, 0, 1])
    """
    return np.arange(kernel_size, dtype=np.int64) - kernel_size // 2


@dataclass
class ConvolutionalPositions(PositionEncoding):
    """The positional convolution of a speech encoder: its effective kernel, read from the module.

    Attributes
    ----------
    kernel : torch.Tensor
        float32 [channels, channels / groups, k] on the CPU: the weight the convolution applies
        (``conv.weight``: after weight normalisation ``g · v / ‖v‖`` where the module has one).
    groups : int
        Channel groups of the convolution (each output channel sees ``channels / groups`` inputs).
    weight_norm : bool
        Whether the module normalises its weight per tap (wav2vec 2.0, HuBERT, WavLM; not HuBERT's
        ``conv_pos_batch_norm`` variant).
    activation : str
        The activation after the convolution (``config.feat_extract_activation``).
    """

    kernel: torch.Tensor = field(default=None, repr=False)
    groups: int = 1
    weight_norm: bool = True
    activation: str = "gelu"

    scheme: ClassVar[str] = "convolutional"
    label: ClassVar[str] = "convolutional positional embedding (relative, no table)"
    formula: ClassVar[str] = (r"x'_i = x_i + \mathrm{act}\Big(b + \sum_{t=0}^{k-1} W_t\, "
                              r"x_{i + t - \lfloor k/2 \rfloor}\Big),\quad W_t = g_t\, v_t / \lVert v_t \rVert")

    @property
    def kernel_size(self) -> int:
        """k, the convolution's width in frames."""
        return int(self.kernel.shape[-1])

    @property
    def offsets(self) -> np.ndarray:
        """int64 [k]: the input-frame offset of each tap (:func:`tap_offsets`)."""
        return tap_offsets(self.kernel_size)

    def tap_norms(self) -> np.ndarray:
        """float32 [k]: the Frobenius norm of the kernel at each tap, ‖W[:, :, t]‖ (with weight
        normalisation over the taps this is |g_t|, the learned magnitude)."""
        return torch.linalg.vector_norm(self.kernel, dim=(0, 1)).numpy().astype(np.float32)

    def describe(self) -> str:
        k, channels = self.kernel_size, int(self.kernel.shape[0])
        first, last = (f"{int(o)}".replace("-", "−") for o in self.offsets[[0, -1]])
        norm = ", its weight normalised over each tap (W_t = g_t·v_t/‖v_t‖)" if self.weight_norm else ""
        return (f"Convolutional positional embedding (Mohamed et al., 2019; wav2vec 2.0: Baevski et al., 2020): no "
                f"table, no vector per position, no score bias. A grouped convolution of width {k} frames "
                f"({self.groups} groups of {channels // self.groups} channels{norm}) runs over the features, and its "
                f"output, after {self.activation}, is added to them before the first layer: each frame gets a "
                f"function of its neighbours' content at offsets {first} … {last}. So order enters relatively (the "
                "same kernel at every frame) and depends on the content; the figure shows how strongly each "
                f"offset is weighted. From `{self.source}`.")

    def signature(self) -> Signature:
        return Signature("Weight of each tap of the positional convolution", "input-frame offset", "‖W_t‖", "norm",
                         {"‖W_t‖": self.tap_norms()}, x=self.offsets, x_name="offsets", markers=True,
                         caption="The Frobenius norm of the kernel at each offset from the output frame (the "
                                 "effective weight, after weight normalisation).")


@dataclass(frozen=True)
class ConvPositionsSpec(PositionSpec):
    """A positional convolution held by one module of the family (``Wav2Vec2PositionalConvEmbedding``).

    Attributes
    ----------
    path : str
        Path of the module whose output is added to the features (``encoder.pos_conv_embed``);
        its ``conv`` is the ``nn.Conv1d``.
    """

    path: str = "encoder.pos_conv_embed"

    encoding: ClassVar[type[PositionEncoding]] = ConvolutionalPositions

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> ConvolutionalPositions | None:
        module = resolve(model, self.path)
        if module is None:
            return None
        conv = module.conv
        with torch.no_grad():
            kernel = conv.weight.detach().to("cpu", torch.float32)  # the parametrized (effective) weight
        return ConvolutionalPositions(f"{self.path}.conv", max_tokens, kernel=kernel, groups=int(conv.groups),
                                      weight_norm=hasattr(conv, "parametrizations"),
                                      activation=str(getattr(config, "feat_extract_activation", "")),
                                      component=self.component)

    def modules(self) -> tuple[str, ...]:
        return (self.path,)

    def removal(self, model: nn.Module) -> list[Patch]:
        return output_patch(model, self.path, f"`{self.path}` output set to 0 (nothing added to the features)", torch.zeros_like)
