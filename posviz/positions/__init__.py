"""Every positional scheme in the form that is true for it: one module per scheme.

Each module holds a scheme's spec (where it lives in a family: an entry of
:data:`posviz.families.FAMILIES`) and its encoding (what :meth:`PositionSpec.read` returns from a
loaded model): learned table (:mod:`~posviz.positions.learned`), fixed sinusoid
(:mod:`~posviz.positions.sinusoid`), rotary (:mod:`~posviz.positions.rotary`), ALiBi
(:mod:`~posviz.positions.alibi`), bucketed relative bias (:mod:`~posviz.positions.relative_bias`),
relative embeddings (:mod:`~posviz.positions.relative_embeddings`), learned patch tables
(:mod:`~posviz.positions.patches`), axial tables (:mod:`~posviz.positions.axial`), LayoutLM's box
tables (:mod:`~posviz.positions.box`), the relative sinusoid (:mod:`~posviz.positions.relative_sinusoid`),
convolutional positions (:mod:`~posviz.positions.convolution`), attention sinks
(:mod:`~posviz.positions.sinks`), NoPE layers (:mod:`~posviz.positions.nope`), schemes built in the
forward pass (:mod:`~posviz.positions.unshown`) and none (:mod:`~posviz.positions.none`).
:mod:`~posviz.positions.base` says what every one offers, :class:`Layers` which layers a component acts on.
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
    "AlibiBias", "Layers", "NoPositions", "PositionEmbeddings", "PositionEncoding", "PositionRemovalError", "PositionSpec",
    "RelativeBias", "RelativeEmbeddings", "RotaryEncoding", "SINUSOID_LAYOUTS", "Signature", "SinusoidalEmbeddings",
    "UnknownPositions", "sinusoidal",
]
