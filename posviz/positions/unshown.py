"""Positions a model builds inside its forward pass, with no table or module to read them from (Funnel).

posviz names such a scheme precisely (what is built, where, from what) and shows no figure of it:
reading it would mean copying the formula, not reading the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from posviz.hooks import Patch
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec


@dataclass
class ForwardBuiltPositions(PositionEncoding):
    """A positional scheme computed in the forward pass only: described, not shown.

    Attributes
    ----------
    text : str
        What the model builds and where, with its source (the family table's words).
    """

    text: str = ""

    scheme: ClassVar[str] = "forward_built"
    label: ClassVar[str] = "relative positions built in the forward pass (not shown)"

    def describe(self) -> str:
        return self.text


@dataclass(frozen=True)
class ForwardBuiltSpec(PositionSpec):
    """A family whose positional information is built in the forward pass, from no module posviz can read.

    Attributes
    ----------
    source : str
        The function or method that builds it (``FunnelAttentionStructure.get_position_embeds``).
    text : str
        What it builds, in words, naming ``source``.
    """

    source: str = ""
    text: str = ""

    encoding: ClassVar[type[PositionEncoding]] = ForwardBuiltPositions

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> ForwardBuiltPositions:
        return ForwardBuiltPositions(self.source, 0, text=self.text, component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        raise PositionRemovalError(f"This model builds its positions inside the forward pass (`{self.source}`), "
                                   "not in a module whose output a hook could replace.")
