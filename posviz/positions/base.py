"""What every positional scheme offers the views, and the table-based schemes.

A scheme is shown through one of two faces:

- ``vectors(positions)``: a vector per position (a learned or sinusoidal table row, the cos/sin
  features of a rotary position, a DeBERTa relative embedding); the position-position matrix is
  then their similarity (dot product or cosine);
- ``bias(positions)``: a per-head bias added to the attention score of query m and key n (ALiBi,
  bucketed relative bias); the position-position matrix is that bias.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import torch


@dataclass
class PositionEncoding(ABC):
    """Base of every scheme's encoding.

    Attributes
    ----------
    scheme : str
        One of the constants of :mod:`posviz.schemes`.
    source : str
        Module path (below the base model) or function the values come from.
    num_positions : int
        Positions the views offer: 0 .. num_positions - 1.
    heads : int or None
        Number of heads for per-head biases; None where the scheme is shared by all heads.
    axis_label : str
        What a row is called on figures ("position", "relative position").
    first_label : int
        The label of row 0 on figures (negative for relative positions).
    component : str
        Which part of the model, where it has several (T5: "encoder", "decoder"; MPNet:
        "absolute table", "relative bias"); empty otherwise.
    """

    scheme: str
    source: str
    num_positions: int
    heads: int | None = field(default=None, kw_only=True)
    axis_label: str = field(default="position", kw_only=True)
    first_label: int = field(default=0, kw_only=True)
    component: str = field(default="", kw_only=True)

    #: The formula in LaTeX, for ``st.latex``.
    formula = ""
    #: "vectors" (:meth:`vectors` gives a vector per position), "bias" (:meth:`bias` gives a
    #: per-head score bias) or "none".
    kind = "vectors"

    @abstractmethod
    def describe(self) -> str:
        """One paragraph for the UI: what the values are, the formula in words, and its source."""

    def vectors(self, positions: np.ndarray) -> torch.Tensor | None:
        """float32 [n, d] on the model's device, row i for ``positions[i]``; None for bias schemes."""
        return None

    def bias(self, positions: np.ndarray) -> np.ndarray | None:
        """float32 [heads, n, n]: the bias added to the score of query ``positions[i]`` and key
        ``positions[j]``; NaN where the key is masked (causal). None for vector schemes."""
        return None


@dataclass
class PositionEmbeddings(PositionEncoding):
    """A table of position vectors, learned or fixed (sinusoidal), with the family offset removed.

    Attributes
    ----------
    tensor : torch.Tensor
        float32 [num_positions, width] on the model's device: row p is the vector the model adds
        to the token at 0-based position p.
    offset : int
        Rows of the stored table skipped before position 0 (2 for RoBERTa, XLM-R, OPT, BART,
        M2M100).
    sinusoid : str or None
        For a fixed sinusoid, its layout (``"interleaved"``, ``"halves"``, ``"t2t"``); else None.
    """

    tensor: torch.Tensor = None
    offset: int = 0
    sinusoid: str | None = None

    @property
    def formula(self) -> str:
        if self.sinusoid:
            return (r"PE_{p,2i} = \sin\!\left(p / 10000^{2i/d}\right),\quad "
                    r"PE_{p,2i+1} = \cos\!\left(p / 10000^{2i/d}\right)")
        return r"x_p = E_{\mathrm{token}}[t_p] + P[p + \mathrm{offset}]\ \big(+\, E_{\mathrm{segment}}[s_p]\ \text{where the model has segments}\big)"

    @property
    def matrix(self) -> np.ndarray:
        """numpy float32 [num_positions, width], a copy of :attr:`tensor`."""
        return self.tensor.cpu().numpy().copy()

    @property
    def width(self) -> int:
        """Columns of the table (``hidden_size``, or ``embedding_size`` for ALBERT and ELECTRA)."""
        return int(self.tensor.shape[1])

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        return self.tensor[torch.as_tensor(positions, device=self.tensor.device)]

    def describe(self) -> str:
        where = f"row p + {self.offset} of `{self.source}`" if self.offset else f"row p of `{self.source}`"
        if self.sinusoid:
            spacing = {
                "interleaved": "sines and cosines interleaved, as in the paper",
                "halves": "all sines, then all cosines (a column permutation of the paper's layout: same Gram matrix)",
                "t2t": "tensor2tensor spacing of the frequencies, exp(-i·ln 10000 / (d/2 - 1)), sines then cosines",
            }[self.sinusoid]
            shifted = f" (so position p gets PE(p + {self.offset}))" if self.offset else ""
            return (f"Fixed sinusoid (Vaswani et al., 2017), not learned: {where} is added at position p{shifted}; "
                    f"layout: {spacing}. Every pair's dot product depends on the offset only: "
                    "PE_m · PE_n = Σ_k cos((m − n)·w_k).")
        return (f"Learned absolute position embeddings: {where} is added to the token at 0-based position p "
                f"({self.num_positions} positions, width {self.width}). Learned in pre-training with the rest "
                "of the model (BERT: Devlin et al., 2019; GPT-2: Radford et al., 2019).")


@dataclass
class NoPositions(PositionEncoding):
    """A model with no positional information posviz can show (none, or a scheme it does not know)."""

    kind = "none"

    def describe(self) -> str:
        if self.scheme == "none":
            return ("This model adds no positional information: it sees its input as a bag of tokens, "
                    "apart from what a causal mask implies.")
        return ("posviz does not know where this architecture keeps its positional information yet. "
                "Its attention patterns are still available on the Attention page.")
