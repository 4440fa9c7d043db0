"""The position embeddings a model has learned, as the rows it adds at each position."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posviz.loading import LoadedModel
from posviz.schemes import SCHEME_LABELS, position_module


class NoPositionTable(ValueError):
    """The model has no learned table of position vectors (rotary, ALiBi, relative bias, ...)."""


@dataclass
class PositionEmbeddings:
    """A learned position table with the family offset removed.

    Attributes
    ----------
    scheme : str
        ``"learned_absolute"``.
    tensor : torch.Tensor
        float32 [num_positions, width], on the model's device: row p is the vector the model
        adds to the token at 0-based position p.
    offset : int
        Rows of the stored table skipped before position 0 (2 for RoBERTa, XLM-R, OPT, BART).
    source : str
        Module path of the table below the base model, e.g. ``"embeddings.position_embeddings"``.
    """

    scheme: str
    tensor: torch.Tensor
    offset: int
    source: str

    @property
    def matrix(self) -> np.ndarray:
        """numpy float32 [num_positions, width], the same values as :attr:`tensor`."""
        return self.tensor.cpu().numpy().copy()

    @property
    def num_positions(self) -> int:
        """Rows of the matrix: positions the model can take."""
        return int(self.tensor.shape[0])

    @property
    def width(self) -> int:
        """Columns of the matrix (``hidden_size``, or ``embedding_size`` for ALBERT and ELECTRA)."""
        return int(self.tensor.shape[1])


def position_embeddings(lm: LoadedModel) -> PositionEmbeddings:
    """The learned position embeddings of a model, row p = what is added at position p.

    Parameters
    ----------
    lm : LoadedModel

    Returns
    -------
    PositionEmbeddings
        ``tensor``/``matrix`` float32 [num_positions, width]; bf16/fp16 tables are cast.

    Raises
    ------
    NoPositionTable
        When the model's scheme has no learned table (rotary, ALiBi, relative bias, ...); the
        message names the scheme.

    Notes
    -----
    Offsets follow the modules of transformers 5.x: RoBERTa-style tables start at
    ``padding_idx + 1`` (``create_position_ids_from_input_ids``); OPT and BART store
    ``offset = 2`` on the module (``OPTLearnedPositionalEmbedding``,
    ``BartLearnedPositionalEmbedding``).
    """
    found = position_module(lm.model, lm.layout)
    if found is None:
        raise NoPositionTable(
            f"{lm.name} ({lm.family}) uses {SCHEME_LABELS[lm.scheme]}: it has no learned table "
            "of position vectors to plot. Its attention patterns are still available."
        )
    table, offset = found
    with torch.no_grad():
        tensor = table.weight[offset:].detach().to(torch.float32)
    return PositionEmbeddings(scheme=lm.scheme, tensor=tensor, offset=offset, source=lm.layout.position)
