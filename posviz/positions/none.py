"""No positional encoding posviz can show: a model without one, or a family posviz does not know yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from torch import nn

from posviz.hooks import Patch
from posviz.positions.base import PositionEncoding, PositionRemovalError, PositionSpec


@dataclass
class NoPositions(PositionEncoding):
    """A model that adds no positional encoding: it sees a bag of tokens, but for a causal mask, or
    it knows order by other means (a recurrence, a convolution), which ``reason`` says.

    Attributes
    ----------
    reason : str
        One sentence on where the model's sense of order comes from (the family table's words:
        Mamba's selective scan); empty for the generic text.
    """

    reason: str = ""

    scheme: ClassVar[str] = "none"
    label: ClassVar[str] = "no positional information"

    def describe(self) -> str:
        return self.reason or ("This model adds no positional information: it sees its input as a bag of tokens, "
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
    """A family without positional encoding: nothing to read, nothing to remove.

    Attributes
    ----------
    reason : str
        Where the family's sense of order comes from instead, in one sentence
        (:attr:`NoPositions.reason`: Mamba's selective scan, RWKV's time mixing); empty for a model
        that has none (it sees a bag of tokens), which gets the generic text.
    """

    reason: str = ""

    encoding: ClassVar[type[PositionEncoding]] = NoPositions

    @property
    def positional(self) -> bool:
        """Whether the model knows order all the same (a recurrence, a convolution: ``reason`` given)."""
        return bool(self.reason)

    def read(self, model: nn.Module, config, *, heads: int, max_tokens: int) -> PositionEncoding:
        return self.encoding("", 0, reason=self.reason, component=self.component)

    def removal(self, model: nn.Module) -> list[Patch]:
        """Nothing to remove; for a model that knows order by its own computation (``reason``), that
        computation cannot be taken out.

        Raises
        ------
        PositionRemovalError
            Where ``reason`` is given.
        """
        if self.reason:
            raise PositionRemovalError(f"{self.reason} That is the model's own computation, not a positional "
                                       "encoding a hook could take out.")
        return []


@dataclass(frozen=True)
class UnknownSpec(NoPositionsSpec):
    """The entry of every model type the family table does not list (it may well know positions)."""

    encoding: ClassVar[type[PositionEncoding]] = UnknownPositions
    positional: ClassVar[bool] = True

    def removal(self, model: nn.Module) -> list[Patch]:
        raise PositionRemovalError("posviz does not know where this family keeps its positional information, "
                                   "so it cannot remove it.")
