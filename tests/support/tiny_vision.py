"""Tiny random configs of vision towers (ViT, DeiT, DINOv2, CLIP, SigLIP)."""

from __future__ import annotations

from tests.support.tiny_models import VOCAB, Family  # noqa: F401

FAMILIES: dict[str, Family] = {}
