"""Every positional scheme in the form that is true for it: one module per scheme.

Each module holds a scheme's spec (where it lives in a family: an entry of
:data:`posviz.families.FAMILIES`) and its encoding (what :meth:`PositionSpec.read` returns from a
loaded model): learned table (:mod:`~posviz.positions.learned`), fixed sinusoid
(:mod:`~posviz.positions.sinusoid`), rotary (:mod:`~posviz.positions.rotary`), ALiBi
(:mod:`~posviz.positions.alibi`), bucketed relative bias (:mod:`~posviz.positions.relative_bias`),
relative embeddings (:mod:`~posviz.positions.relative_embeddings`) and none
(:mod:`~posviz.positions.none`). :mod:`~posviz.positions.base` says what every one offers.
"""

from posviz.positions.alibi import AlibiBias
from posviz.positions.base import Layers, PositionEncoding, PositionRemovalError, PositionSpec, Signature
from posviz.positions.learned import PositionEmbeddings
from posviz.positions.none import NoPositions, UnknownPositions
from posviz.positions.relative_bias import RelativeBias
from posviz.positions.relative_embeddings import RelativeEmbeddings
from posviz.positions.rotary import RotaryEncoding
from posviz.positions.sinusoid import SINUSOID_LAYOUTS, SinusoidalEmbeddings, sinusoidal

__all__ = [
    "AlibiBias", "NoPositions", "PositionEmbeddings", "PositionEncoding", "PositionRemovalError", "PositionSpec",
    "RelativeBias", "RelativeEmbeddings", "RotaryEncoding", "SINUSOID_LAYOUTS", "Signature", "SinusoidalEmbeddings",
    "UnknownPositions", "sinusoidal",
]
