"""Tiny random configs of more text families with learned tables (Longformer, BigBird, LED, GPT-Neo …)."""

from __future__ import annotations

from tests.support.tiny_models import VOCAB, Family  # noqa: F401

FAMILIES: dict[str, Family] = {}
