"""The fixed sinusoid of Vaswani et al. (2017), in the three layouts found in real code.

:func:`sinusoidal` computes it from the formula (the reference beside any model); a family that
adds a fixed sinusoid to its input (Marian, Pegasus, M2M100, NLLB, Whisper's encoder, XGLM, the
XLM and DistilBERT options) is read from its own module by :class:`SinusoidSpec`; one that holds it
as a buffer of its model and indexes it in the forward (CTRL's ``pos_encoding``) by
:class:`SinusoidBufferSpec`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch

from torch import nn

from posviz.hooks import Patch, resolve
from posviz.positions.base import PositionEncoding, PositionRemovalError
from posviz.positions.learned import LearnedTableSpec, PositionEmbeddings

#: Column layouts of a sinusoid table (see :func:`sinusoidal`).
SINUSOID_LAYOUTS = ("interleaved", "halves", "t2t")

_SPACING = {
    "interleaved": "sines and cosines interleaved, as in the paper",
    "halves": "all sines, then all cosines (a column permutation of the paper's layout: same Gram matrix)",
    "t2t": "tensor2tensor spacing of the frequencies, exp(-i·ln 10000 / (d/2 - 1)), sines then cosines",
}


def sinusoidal(num_positions: int, width: int, layout: str = "interleaved") -> np.ndarray:
    """Sinusoidal position embeddings, computed in float64 and returned as float32.

    ``PE(p, 2i) = sin(p / 10000^(2i/d))``, ``PE(p, 2i+1) = cos(p / 10000^(2i/d))`` (Vaswani et al.,
    "Attention Is All You Need", 2017), d = ``width``, i = 0 .. d/2 - 1.

    Parameters
    ----------
    num_positions : int
        Rows (positions 0 .. num_positions - 1).
    width : int
        Columns d; must be even.
    layout : {"interleaved", "halves", "t2t"}
        ``"interleaved"``: sin and cos alternate, as in the paper (XLM, DistilBERT's
        ``sinusoidal_pos_embds``). ``"halves"``: the same frequencies, all sines then all cosines
        (Marian, Pegasus). ``"t2t"``: tensor2tensor spacing ``inv_i = exp(-i ln(10000) / (d/2 - 1))``,
        sines then cosines (M2M100, NLLB, Whisper's encoder).

    Returns
    -------
    np.ndarray
        float32 [num_positions, width]. Every layout has ``PE_i · PE_j = Σ_k cos((i - j) w_k)``.

    Raises
    ------
    ValueError
        For an odd width or an unknown layout.

    Examples
    --------
    >>> pe = sinusoidal(4, 8)
    >>> float(pe[2] @ pe[2])   # PE_p · PE_p = d / 2
    4.0
    """
    if width % 2:
        raise ValueError(f"width must be even, not {width}")
    half = width // 2
    if layout == "t2t":
        inv = np.exp(-np.arange(half) * np.log(10000.0) / (half - 1))
    elif layout in ("interleaved", "halves"):
        inv = 1.0 / 10000.0 ** (2 * np.arange(half) / width)
    else:
        raise ValueError(f"layout must be one of {SINUSOID_LAYOUTS}, not {layout!r}")
    angles = np.arange(num_positions)[:, None] * inv[None, :]
    out = np.empty((num_positions, width))
    if layout == "interleaved":
        out[:, 0::2], out[:, 1::2] = np.sin(angles), np.cos(angles)
    else:
        out[:, :half], out[:, half:] = np.sin(angles), np.cos(angles)
    return out.astype(np.float32)


@dataclass
class SinusoidalEmbeddings(PositionEmbeddings):
    """A fixed sinusoid table, as the model's module holds it (not recomputed: the module's values).

    Attributes
    ----------
    sinusoid : {"interleaved", "halves", "t2t"}
        Its column layout (:func:`sinusoidal`).
    """

    sinusoid: str = "interleaved"

    scheme: ClassVar[str] = "sinusoidal"
    label: ClassVar[str] = "fixed sinusoidal position embeddings"
    formula: ClassVar[str] = (r"\begin{gathered} PE_{p,2i} = \sin\!\left(p / 10000^{2i/d}\right) \\ "
                              r"PE_{p,2i+1} = \cos\!\left(p / 10000^{2i/d}\right) \end{gathered}")

    def describe(self) -> str:
        shifted = f" (so position p gets PE(p + {self.offset}))" if self.offset else ""
        return (f"Fixed sinusoid (Vaswani et al., 2017), not learned: {self.where} is added at position p{shifted}; "
                f"layout: {_SPACING[self.sinusoid]}. Every pair's dot product depends on the offset only: "
                "PE_m · PE_n = Σ_k cos((m − n)·w_k).")


@dataclass(frozen=True)
class SinusoidSpec(LearnedTableSpec):
    """A fixed sinusoid table held by one module of the family.

    Its values are computed by the family's own ``_init_weights`` (or at construction), so a
    checkpoint may lack them: a positions-only load keeps the computed table then.

    Attributes
    ----------
    layout : {"interleaved", "halves", "t2t"}
    """

    layout: str = "interleaved"

    encoding: ClassVar[type[PositionEncoding]] = SinusoidalEmbeddings
    computed: ClassVar[bool] = True

    def _encoding(self, tensor: torch.Tensor, offset: int) -> SinusoidalEmbeddings:
        return SinusoidalEmbeddings(self.path, int(tensor.shape[0]), tensor=tensor, offset=offset,
                                    sinusoid=self.layout, component=self.component)


@dataclass(frozen=True)
class SinusoidBufferSpec(SinusoidSpec):
    """A fixed sinusoid held as a tensor (a buffer) at ``path``, indexed by the model's forward itself
    (CTRL: ``pos_encoding[position_ids, :]`` in ``CTRLModel.forward``), not through a module.

    No module outputs it, so the input representation cannot record it and no forward hook can take it
    out; a positions-only load gives the buffer alone real values (``_init_weights`` of its owner).
    """

    @property
    def input_path(self) -> None:
        return None

    def _table(self, model: nn.Module) -> tuple[torch.Tensor, int] | None:
        table = resolve(model, self.path)
        return None if table is None else (table, 0)

    def removal(self, model: nn.Module) -> list[Patch]:
        """No patch can remove it.

        Raises
        ------
        PositionRemovalError
            Always: the buffer is indexed in the forward, not output by a module a hook could reach.
        """
        raise PositionRemovalError(f"This model indexes its sinusoid `{self.path}` inside its own forward, not "
                                   "through a module, so no forward hook can take it out.")


def reference_sinusoid(num_positions: int, width: int, layout: str = "interleaved") -> SinusoidalEmbeddings:
    """The sinusoid of the formula (:func:`sinusoidal`) as an encoding: the reference the views set
    beside a model (Compare, Probes, Properties).

    Parameters
    ----------
    num_positions : int
    width : int
        Even.
    layout : {"interleaved", "halves", "t2t"}

    Returns
    -------
    SinusoidalEmbeddings
        On the CPU; its ``source`` names it ("sinusoid, width 384 (interleaved)").

    Raises
    ------
    ValueError
        As :func:`sinusoidal`.
    """
    table = torch.from_numpy(sinusoidal(num_positions, width, layout))
    return SinusoidalEmbeddings(f"sinusoid, width {width} ({layout})", num_positions, tensor=table, sinusoid=layout)
