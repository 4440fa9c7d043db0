"""Layers without positional encoding (NoPE) in a model whose other layers have one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from posviz.positions.base import PositionEncoding, layer_list
from posviz.positions.none import NoPositions, NoPositionsSpec


@dataclass
class NoPELayers(NoPositions):
    """The layers of a model that apply no positional encoding while its others do (SmolLM3, Llama 4,
    Cohere 2): their attention scores are content only; order reaches them through the hidden states
    the positional layers wrote and through the causal mask (Kazemnejad et al., "The Impact of
    Positional Encoding on Length Generalization in Transformers", 2023)."""

    scheme: ClassVar[str] = "nope"
    label: ClassVar[str] = "no positional encoding (NoPE)"

    def describe(self) -> str:
        where = layer_list(self.layers) if self.layers else "These layers"
        return (f"No positional encoding (NoPE) in {where}: nothing is added to their input and their queries and "
                "keys are not rotated, so their attention scores depend on content only. They still tell positions "
                "apart through what the other layers wrote into the hidden states and through the causal mask "
                "(Kazemnejad et al., 2023).")


@dataclass(frozen=True)
class NoPESpec(NoPositionsSpec):
    """The NoPE layers of a family that mixes them with positional ones (give :attr:`layers`)."""

    encoding: ClassVar[type[PositionEncoding]] = NoPELayers
