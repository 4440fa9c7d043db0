"""Learned 2-D box embeddings (LayoutLM): a vector per page coordinate of a token's bounding box.

Xu et al., "LayoutLM: Pre-training of Text and Layout for Document Image Understanding" (KDD 2020).
Beside its 1-D position table, LayoutLM adds for each token the rows of four more tables indexed by
its box ``(x0, y0, x1, y1)`` on a page normalised to 0 … 1000 (``LayoutLMEmbeddings.forward``):
``X[x0] + Y[y0] + X[x1] + Y[y1] + H[y1 − y0] + W[x1 − x0]``. A row here is a coordinate, not a
token's position in the sentence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
from torch import nn

from posviz.positions.base import PositionEncoding, Signature
from posviz.positions.learned import LearnedTableSpec, PositionEmbeddings


@dataclass
class BoxEmbeddings(PositionEmbeddings):
    """One of LayoutLM's box tables: row c is added for a box coordinate (or extent) equal to c.

    Attributes
    ----------
    indexed_by : str
        What picks the row, in words ("the left edge x0 and the right edge x1 of the token's box").
    """

    indexed_by: str = ""

    scheme: ClassVar[str] = "learned_box"
    label: ClassVar[str] = "learned 2-D box embeddings (LayoutLM)"
    formula: ClassVar[str] = (r"x_p = E[t_p] + P[p] + X[x_0] + Y[y_0] + X[x_1] + Y[y_1] + H[y_1 - y_0] "
                              r"+ W[x_1 - x_0] + S[s_p]")
    vector_name: ClassVar[str] = "box embeddings"

    def describe(self) -> str:
        return (f"LayoutLM's 2-D position embeddings (Xu et al., KDD 2020): row c of `{self.source}` is added to a "
                f"token when {self.indexed_by} is c, on the page's 0 … 1000 grid ({self.num_positions} rows, width "
                f"{self.width}). Rows are box coordinates, not positions in the sentence. Text alone has no boxes: "
                "posviz runs sentences with the model's default box (0, 0, 0, 0), so every token gets row 0.")

    def signature(self) -> Signature:
        norms = np.linalg.norm(self.matrix, axis=1)
        return Signature("Length of each box embedding", "coordinate c", "L2 norm", "norm",
                         {"‖box embedding‖": norms}, x_name="coordinates",
                         caption=f"Row c is added when {self.indexed_by} is c.")


@dataclass(frozen=True)
class BoxTableSpec(LearnedTableSpec):
    """A box table of LayoutLM: read like a learned table, but not the input's position vector.

    Attributes
    ----------
    indexed_by : str
        What picks the row, in words (:attr:`BoxEmbeddings.indexed_by`).
    """

    indexed_by: str = ""

    encoding: ClassVar[type[PositionEncoding]] = BoxEmbeddings

    @property
    def input_path(self) -> str | None:
        """None: the Input page's position vector is the 1-D table's."""
        return None

    def table_positions(self, model: nn.Module) -> int | None:
        """None: the rows are coordinates, which do not limit the number of tokens."""
        return None

    def _encoding(self, tensor: torch.Tensor, offset: int) -> BoxEmbeddings:
        return BoxEmbeddings(self.path, int(tensor.shape[0]), tensor=tensor, offset=offset,
                             indexed_by=self.indexed_by, axis_label="coordinate", component=self.component)
