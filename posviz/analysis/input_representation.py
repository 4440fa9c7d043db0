"""The input representation of a sentence: token + segment + position, before and after LayerNorm."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from posviz.hooks import Patch, hooked, resolve
from posviz.loading import LoadedModel
from posviz.tokenization import encode

#: Largest |other| (relative to the largest |sum|) that is float32 rounding of a different order of
#: addition, not a part of its own.
OTHER_TOLERANCE = 1e-5


@dataclass
class InputRepresentation:
    """The parts of a sentence's input representation, as the model computed them.

    Every array is numpy float32 [num_tokens, width].

    Attributes
    ----------
    tokens : list of str
    token : np.ndarray
        Token (word) embedding of each token, scaled or projected as the model does.
    segment : np.ndarray or None
        Segment (token type) embedding; None where the family has no segment table.
    position : np.ndarray or None
        Position embedding added at each position; None for schemes that add none to the input.
    sum : np.ndarray
        The input before the embedding LayerNorm, as the LayerNorm received it (:func:`input_sum`);
        ``token + segment + position`` where the model has no LayerNorm.
    normalized : np.ndarray or None
        Output of the embedding LayerNorm; None where the model has none (GPT-2, OPT).
    truncated : int
        Tokens dropped so the input fits the model.
    other : np.ndarray or None
        What the model adds besides the token, segment and position vectors (LayoutLM's box
        embeddings, ERNIE 3's task embedding): the LayerNorm's input less their sum; None where
        that is float32 rounding (:data:`OTHER_TOLERANCE`) or the model has no embedding LayerNorm.
    """

    tokens: list[str]
    token: np.ndarray
    segment: np.ndarray | None
    position: np.ndarray | None
    sum: np.ndarray
    normalized: np.ndarray | None
    truncated: int
    other: np.ndarray | None = None

    @property
    def parts(self) -> dict[str, np.ndarray]:
        """The parts the model has, by name, in the order of the figures: "token", "segment",
        "position", "other", "sum", "after LayerNorm"."""
        named = {"token": self.token, "segment": self.segment, "position": self.position, "other": self.other,
                 "sum": self.sum, "after LayerNorm": self.normalized}
        return {name: value for name, value in named.items() if value is not None}


def _rows(t: torch.Tensor) -> np.ndarray:
    """[1, n, d] (or [n, d]: Marian's and Pegasus' position modules have no batch axis) -> float32 [n, d]."""
    return (t[0] if t.dim() == 3 else t).detach().to(torch.float32).cpu().numpy()


def record_parts(lm: LoadedModel, model_inputs: dict[str, torch.Tensor], patches: Sequence[Patch] = (),
                 **forward_kwargs):
    """One forward pass of ``lm.forward_module`` that records what the model's own embedding
    modules output (:func:`posviz.hooks.hooked`).

    Parameters
    ----------
    lm : LoadedModel
    model_inputs : dict of str to torch.Tensor
        The forward's inputs (:func:`posviz.tokenization.encode`).
    patches : sequence of Patch
        Module outputs replaced during the pass (the word-order demonstration's position removal);
        a patched part is recorded as patched.
    **forward_kwargs
        Passed to the forward (``output_hidden_states=True`` …).

    Returns
    -------
    captured : dict of str to torch.Tensor
        ``"token"`` (scaled as the model scales it, ``Family.token_scale``), and where the model
        has them ``"segment"``, ``"position"``, ``"normalized"`` (the embedding LayerNorm's output)
        and ``"layernorm_input"`` (what that LayerNorm receives); each [1, n, d] (Marian's and
        Pegasus' positions: [n, d]), n the input's tokens: rows a model appends itself (Longformer
        and LED pad to a multiple of their attention window) are dropped.
    output
        The forward's output.
    """
    family = lm.family
    paths = {"token": next((p for p in family.token if resolve(lm.model, p) is not None), None),
             "segment": family.segment, "position": family.input_positions, "normalized": family.layernorm}
    modules = {key: module for key, path in paths.items() if path and (module := resolve(lm.model, path)) is not None}
    inputs = {"layernorm_input": modules["normalized"]} if "normalized" in modules else {}
    with hooked(modules, patches, inputs) as captured, torch.no_grad():
        output = lm.forward_module(**model_inputs, **forward_kwargs)
    n = model_inputs["input_ids"].shape[-1]
    captured = {key: value[..., :n, :] for key, value in captured.items()}
    if "token" in captured and family.token_scale:
        captured["token"] = captured["token"] * resolve(lm.model, family.token_scale)
    return captured, output


def parts_sum(captured: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(token + segment) + position`` in float32, in ``BertEmbeddings.forward``'s order of
    addition, from :func:`record_parts`' record."""
    total = captured["token"].to(torch.float32)
    for key in ("segment", "position"):
        if key in captured:
            total = total + captured[key].to(torch.float32)
    return total


def input_sum(captured: dict[str, torch.Tensor]) -> torch.Tensor:
    """The input representation before the embedding LayerNorm, in float32, from
    :func:`record_parts`' record: what that LayerNorm received, where the model has one of the
    parts' width (not DeBERTa's ``embed_proj`` output); else :func:`parts_sum`."""
    total = parts_sum(captured)
    received = captured.get("layernorm_input")
    return received.to(torch.float32) if received is not None and received.shape == total.shape else total


def _other(captured: dict[str, torch.Tensor]) -> np.ndarray | None:
    """:attr:`InputRepresentation.other` from :func:`record_parts`' record, float32 [n, d], or None."""
    total, parts = _rows(input_sum(captured)), _rows(parts_sum(captured))
    other = total - parts
    return other if np.abs(other).max() > OTHER_TOLERANCE * max(np.abs(total).max(), 1.0) else None


def input_representation(lm: LoadedModel, text: str, text_pair: str | None = None) -> InputRepresentation:
    """The input representation of ``text`` (and ``text_pair`` as segment B).

    One forward pass with forward hooks on the model's own modules (the ones its family entry
    names, :mod:`posviz.families`), so every part is what the model itself computed: position ids,
    offsets and scalings (BART's ``embed_scale``, OPT's ``project_in``) included. The sum is what
    the embedding LayerNorm receives (:func:`input_sum`), or ``(token + segment) + position`` as
    in ``BertEmbeddings.forward`` where the model has none; what the model adds besides those
    parts is ``other`` (LayoutLM's box embeddings).

    Parameters
    ----------
    lm : LoadedModel
    text, text_pair : str
        Segment A and, optionally, segment B.

    Returns
    -------
    InputRepresentation

    Raises
    ------
    ValueError
        When ``text`` is empty or only whitespace, ``text`` or ``text_pair`` is not valid
        Unicode text (a lone surrogate, :func:`posviz.tokenization.check_text`), or the model's
        family is not in the family table (no known token embedding module).
    """
    if not lm.family.token:
        raise ValueError(
            f"posviz does not know where {lm.model_type} keeps its token embeddings, so it cannot "
            "split its input representation. Its attention patterns are still available.")
    encoded = encode(lm, text, text_pair)
    captured, _ = record_parts(lm, encoded.model_inputs)
    optional = {key: _rows(captured[key]) if key in captured else None for key in ("segment", "position", "normalized")}
    return InputRepresentation(tokens=encoded.tokens, token=_rows(captured["token"]), sum=_rows(input_sum(captured)),
                               truncated=encoded.truncated, other=_other(captured), **optional)
