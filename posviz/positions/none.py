"""No positional encoding posviz can show: a model without one, or a family posviz does not know yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from posviz.hooks import Patch
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec


@dataclass
class NoPositions(PositionEncoding):
    """A model that adds no positional information: it sees a bag of tokens, but for a causal mask."""

    scheme: ClassVar[str] = "none"
    label: ClassVar[str] = "no positional information"

    def describe(self) -> str:
        return ("This model adds no positional information: it sees its input as a bag of tokens, "
                "apart from what a causal mask implies.")


@dataclass
class UnknownPositions(NoPositions):
    """A family posviz does not know: where it keeps its positions is not in the family table."""

    scheme: ClassVar[str] = "unknown"
    label: ClassVar[str] = "a positional scheme posviz does not know yet"

    def describe(self) -> str:
        return ("posviz does not know where this architecture keeps its positional information yet. "
                "Its attention patterns are still available on the Attention page.")


@dataclass(frozen=True)
class NoPositionsSpec(PositionSpec):
    """A family without positional encoding: nothing to read, nothing to remove."""

    encoding: ClassVar[type[PositionEncoding]] = NoPositions
    positional: ClassVar[bool] = False

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> PositionEncoding:
        return self.encoding("", 0, component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        return []


@dataclass(frozen=True)
class UnknownSpec(NoPositionsSpec):
    """The entry of every model type the family table does not list (it may well know positions)."""

    encoding: ClassVar[type[PositionEncoding]] = UnknownPositions
    positional: ClassVar[bool] = True

    def removal(self, model: nn.Module) -> list[Patch]:
        raise PositionRemovalError("posviz does not know where this family keeps its positional information, "
                                   "so it cannot remove it.")
