"""Learned absolute position embeddings: a table whose row p (plus the family's offset) is added at position p.

BERT (Devlin et al., 2019), GPT-2 (Radford et al., 2019) and their kin learn one vector per
position in pre-training and add it to the token embedding. Families differ in where the table
lives and in how many rows come before position 0 (the offset: 2 for RoBERTa, XLM-R, MPNet, OPT,
BART; see ``docs/references.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np
import torch
from torch import nn

from posviz.hooks import Patch, output_patch, resolve
from posviz.positions.base import PositionEncoding, PositionSpec, Signature


def module_offset(table: nn.Module) -> int:
    """Offset stored on the module itself (``OPTLearnedPositionalEmbedding.offset``, BART's, M2M100's)."""
    return int(table.offset)


def padding_offset(table: nn.Module) -> int:
    """RoBERTa-style offset: position ids start at ``padding_idx + 1`` (``create_position_ids_from_input_ids``)."""
    return int(table.padding_idx) + 1


@dataclass
class PositionEmbeddings(PositionEncoding):
    """A table of learned position vectors, with the family offset removed.

    Attributes
    ----------
    tensor : torch.Tensor
        float32 [num_positions, width] on the model's device: row p is the vector the model adds
        to the token at 0-based position p.
    offset : int
        Rows of the stored table skipped before position 0 (2 for RoBERTa, XLM-R, OPT, BART,
        M2M100).
    note : str
        What to look for in this family's table (the family table's words), or empty.
    """

    tensor: torch.Tensor = field(default=None, repr=False)
    offset: int = 0
    note: str = ""

    scheme: ClassVar[str] = "learned_absolute"
    label: ClassVar[str] = "learned absolute position embeddings"
    formula: ClassVar[str] = r"x_p = E_{\mathrm{token}}[t_p] + P[p + \mathrm{offset}]\ \big(+\, E_{\mathrm{segment}}[s_p]\big)"
    has_vectors: ClassVar[bool] = True
    metric_names: ClassVar[dict[str, str]] = {"dot": "dot product P·Pᵀ", "cosine": "of unit vectors"}

    @property
    def matrix(self) -> np.ndarray:
        """numpy float32 [num_positions, width], a copy of :attr:`tensor`."""
        return self.tensor.cpu().numpy().copy()

    @property
    def width(self) -> int:
        """Columns of the table (``hidden_size``, or ``embedding_size`` for ALBERT and ELECTRA)."""
        return int(self.tensor.shape[1])

    def vectors(self, positions: np.ndarray) -> torch.Tensor:
        return self.tensor[torch.as_tensor(np.asarray(positions), device=self.tensor.device)]

    @property
    def where(self) -> str:
        """Which stored row is position p, in words."""
        return f"row p + {self.offset} of `{self.source}`" if self.offset else f"row p of `{self.source}`"

    def describe(self) -> str:
        return (f"Learned absolute position embeddings: {self.where} is added to the token at 0-based position p "
                f"({self.num_positions} positions, width {self.width}). Learned in pre-training with the rest "
                "of the model (BERT: Devlin et al., 2019; GPT-2: Radford et al., 2019).")

    def signature(self) -> Signature:
        norms = np.linalg.norm(self.matrix, axis=1)
        return Signature("Length of each position embedding", "position p", "L2 norm", "norm",
                         {"‖position embedding‖": norms}, caption=self.note)


@dataclass(frozen=True)
class LearnedTableSpec(PositionSpec):
    """A table of position vectors held by one module of the family (``nn.Embedding`` or a buffer).

    Attributes
    ----------
    path : str
        Path of the position module below the base model.
    offset : callable or None
        ``offset(module) -> int``: rows of the table skipped before position 0.
    table_attr : str
        Attribute of the module that holds the table (``"weights"`` for M2M100's buffer).
    note : str
        What to look for in this family's table, shown under its signature.
    """

    path: str
    offset: Callable[[nn.Module], int] | None = None
    table_attr: str = "weight"
    note: str = ""

    encoding: ClassVar[type[PositionEncoding]] = PositionEmbeddings

    @property
    def input_path(self) -> str:
        return self.path

    def _table(self, model: nn.Module) -> tuple[torch.Tensor, int] | None:
        """The stored table and its offset: ``table[offset + p]`` ([rows, width]) is added at position p."""
        module = resolve(model, self.path)
        if module is None:
            return None
        return getattr(module, self.table_attr), self.offset(module) if self.offset else 0

    def _encoding(self, tensor: torch.Tensor, offset: int) -> PositionEmbeddings:
        return PositionEmbeddings(self.path, int(tensor.shape[0]), tensor=tensor, offset=offset, note=self.note,
                                  component=self.component)

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> PositionEmbeddings | None:
        found = self._table(model)
        if found is None:
            return None
        table, offset = found
        with torch.no_grad():
            return self._encoding(table[offset:].detach().to(torch.float32), offset)

    def modules(self) -> tuple[str, ...]:
        return (self.path,)

    def table_positions(self, model: nn.Module) -> int | None:
        found = self._table(model)
        return None if found is None else int(found[0].shape[0]) - found[1]

    def removal(self, model: nn.Module) -> list[Patch]:
        return output_patch(model, self.path, f"`{self.path}` output set to 0 (no position vector added)", torch.zeros_like)
