"""Tiny random configs of speech encoders and decoders (wav2vec2, HuBERT, WavLM, Whisper's decoder) and other own-form schemes."""

from __future__ import annotations

from tests.support.tiny_models import VOCAB, Family  # noqa: F401

FAMILIES: dict[str, Family] = {}
