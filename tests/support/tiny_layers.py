"""Tiny random configs of models that mix positional schemes layer by layer (ModernBERT, Gemma 3, SmolLM3 …) and other modern LLMs."""

from __future__ import annotations

from tests.support.tiny_models import VOCAB, Family  # noqa: F401

FAMILIES: dict[str, Family] = {}
