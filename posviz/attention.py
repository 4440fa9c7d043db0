"""Attention patterns of a sentence, per layer and head."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posviz.encoding import encode
from posviz.loading import LoadedModel


@dataclass
class AttentionPatterns:
    """The attention patterns of one input.

    Attributes
    ----------
    tokens : list of str
    patterns : np.ndarray
        float32 [layers, heads, num_tokens, num_tokens]; ``patterns[l, h, i, j]`` is how much
        query token i attends to key token j in layer l, head h (each row sums to 1).
    truncated : int
        Tokens dropped so the input fits the model.
    """

    tokens: list[str]
    patterns: np.ndarray
    truncated: int


def attention(lm: LoadedModel, text: str, text_pair: str | None = None) -> AttentionPatterns:
    """Self-attention patterns of ``text`` (and ``text_pair``), from the model's own forward pass.

    Uses ``output_attentions=True`` with the eager implementation (the model is loaded with
    ``attn_implementation="eager"``). For an encoder-decoder model, the encoder's self-attention.

    Returns
    -------
    AttentionPatterns

    Raises
    ------
    ValueError
        When ``text`` is empty.
    """
    encoded = encode(lm, text, text_pair)
    with torch.no_grad():
        out = lm.forward_module(**encoded.model_inputs, output_attentions=True)
        patterns = torch.stack([a[0] for a in out.attentions]).to(torch.float32).cpu().numpy()
    return AttentionPatterns(tokens=encoded.tokens, patterns=patterns, truncated=encoded.truncated)


def without_tokens(patterns: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Drop query and key tokens where ``keep`` is False and renormalise each row to sum to 1.

    Parameters
    ----------
    patterns : np.ndarray
        [..., num_tokens, num_tokens] attention patterns.
    keep : np.ndarray
        bool [num_tokens].

    Returns
    -------
    np.ndarray
        [..., kept, kept]; a row whose kept mass is 0 stays 0.
    """
    sub = patterns[..., keep, :][..., keep]
    mass = sub.sum(axis=-1, keepdims=True)
    return np.divide(sub, mass, out=np.zeros_like(sub), where=mass > 0)
