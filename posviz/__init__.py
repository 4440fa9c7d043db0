"""posviz: see how transformer models encode word order.

A plain library (no Streamlit): load a model, read its positional encodings (``lm.encodings``),
the input representation and attention patterns of a sentence, and compare positions. The views
(:mod:`posviz.views`) turn these into figures; the app (:mod:`posviz.app`) draws them.

``import posviz`` itself imports nothing heavy: each name below is imported from its module on
first use (PEP 562), so that a process that needs only a part of posviz (the app's entry, which
starts its warm-up before torch is imported) does not pay for torch and transformers up front.
"""

from __future__ import annotations

import importlib

#: The version of posviz: written here only (the package's metadata reads it, pyproject.toml's
#: ``[tool.hatch.version]``; ``posviz --version`` prints it). See CHANGELOG.md.
__version__ = "0.1.0"

#: Each public name and the module it comes from.
_PUBLIC = {
    "posviz.analysis.attention": ("AttentionPatterns", "attention"),
    "posviz.analysis.attention_offsets": ("OffsetProfile", "scheme_by_offset"),
    "posviz.analysis.attention_budget": ("AttentionBudgetError", "Window"),
    "posviz.analysis.attention_reading": ("AttentionReading", "corpus_offsets", "read_attention"),
    "posviz.analysis.input_representation": ("InputRepresentation", "input_representation"),
    "posviz.analysis.projection": ("project",),
    "posviz.analysis.similarity": ("row_profile", "similarity"),
    "posviz.loading": ("BUNDLED_NAME", "LoadedModel", "ModelLoadError", "ModelTooLargeError", "NoTokenizerError",
                       "load_model"),
    "posviz.positions": ("AlibiBias", "NoPositions", "PositionEmbeddings", "PositionEncoding", "RelativeBias",
                         "RelativeEmbeddings", "RotaryEncoding", "SinusoidalEmbeddings", "UnknownPositions",
                         "sinusoidal"),
}
_SOURCE = {name: module for module, names in _PUBLIC.items() for name in names}

__all__ = sorted(_SOURCE)


def __getattr__(name: str):
    """The public name ``name``, imported from its module on first use (then kept in this module).

    Raises
    ------
    AttributeError
        For a name posviz does not export.
    """
    if name not in _SOURCE:
        raise AttributeError(f"module 'posviz' has no attribute {name!r}")
    value = getattr(importlib.import_module(_SOURCE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the lazily imported public ones included."""
    return sorted(set(globals()) | set(__all__))
