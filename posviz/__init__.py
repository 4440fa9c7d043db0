"""posviz: see how transformer models encode word order.

A plain library (no Streamlit): load a model, read its positional encodings (``lm.encodings``),
the input representation and attention patterns of a sentence, and compare positions. The views
(:mod:`posviz.views`) turn these into figures; the app (:mod:`posviz.app`) draws them.
"""

from posviz.analysis.attention import AttentionPatterns, attention
from posviz.analysis.input_representation import InputRepresentation, input_representation
from posviz.analysis.projection import project
from posviz.analysis.similarity import row_profile, similarity
from posviz.loading import BUNDLED_NAME, LoadedModel, ModelLoadError, ModelTooLargeError, load_model
from posviz.positions import (
    AlibiBias, NoPositions, PositionEmbeddings, PositionEncoding, RelativeBias, RelativeEmbeddings, RotaryEncoding,
    SinusoidalEmbeddings, UnknownPositions, sinusoidal,
)

__all__ = [
    "AlibiBias", "AttentionPatterns", "BUNDLED_NAME", "InputRepresentation", "LoadedModel", "ModelLoadError",
    "ModelTooLargeError", "NoPositions", "PositionEmbeddings", "PositionEncoding", "RelativeBias",
    "RelativeEmbeddings", "RotaryEncoding", "SinusoidalEmbeddings", "UnknownPositions", "attention",
    "input_representation", "load_model", "project", "row_profile", "similarity", "sinusoidal",
]
