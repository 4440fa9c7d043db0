"""posviz: see how transformer models encode word order.

A plain library (no Streamlit): load a model, read its position embeddings, the input
representation and attention patterns of a sentence, and compare positions.
"""

from posviz.analysis import project, row_profile, similarity
from posviz.attention import AttentionPatterns, attention
from posviz.embeddings import InputEmbeddings, input_embeddings
from posviz.loading import BUNDLED_NAME, LoadedModel, ModelLoadError, ModelTooLargeError, load_model
from posviz.positions import (
    AlibiBias, NoPositions, PositionEmbeddings, PositionEncoding, RelativeBias, RelativeEmbeddings, RotaryEncoding,
    position_embeddings, position_encodings, sinusoidal,
)

__all__ = [
    "AlibiBias", "AttentionPatterns", "BUNDLED_NAME", "InputEmbeddings", "LoadedModel", "ModelLoadError",
    "ModelTooLargeError", "NoPositions", "PositionEmbeddings", "PositionEncoding", "RelativeBias", "RelativeEmbeddings", "RotaryEncoding",
    "attention", "input_embeddings", "load_model", "position_embeddings", "position_encodings", "project",
    "row_profile", "similarity", "sinusoidal",
]
