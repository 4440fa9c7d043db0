"""The input representation of a sentence: token + segment + position, before and after LayerNorm."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posviz.encoding import encode
from posviz.loading import LoadedModel
from posviz.schemes import resolve


@dataclass
class InputEmbeddings:
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
        Position embedding added at each position; None for schemes without a learned table.
    sum : np.ndarray
        ``token + segment + position``, in the model's order of addition.
    normalized : np.ndarray or None
        Output of the embedding LayerNorm; None where the model has none (GPT-2, OPT).
    truncated : int
        Tokens dropped so the input fits the model.
    """

    tokens: list[str]
    token: np.ndarray
    segment: np.ndarray | None
    position: np.ndarray | None
    sum: np.ndarray
    normalized: np.ndarray | None
    truncated: int


def _numpy(t: torch.Tensor | None) -> np.ndarray | None:
    """[1, n, d] (or [n, d]: Marian's and Pegasus' position modules have no batch axis) -> [n, d]."""
    if t is None:
        return None
    return (t[0] if t.dim() == 3 else t).detach().to(torch.float32).cpu().numpy()


def input_embeddings(lm: LoadedModel, text: str, text_pair: str | None = None) -> InputEmbeddings:
    """The input representation of ``text`` (and ``text_pair`` as segment B).

    One forward pass of the model's embedding stage with forward hooks on its own modules (the
    ones named in :mod:`posviz.schemes`), so every part is what the model itself computed:
    position ids, offsets and scalings (BART's ``embed_scale``, OPT's ``project_in``) included.
    The sum is ``(token + segment) + position`` as in ``BertEmbeddings.forward``.

    Parameters
    ----------
    lm : LoadedModel
    text, text_pair : str
        Segment A and, optionally, segment B.

    Returns
    -------
    InputEmbeddings

    Raises
    ------
    ValueError
        When ``text`` is empty, or the model's family is not in the registry (no known token
        embedding module).
    """
    layout = lm.layout
    if not layout.token:
        raise ValueError(
            f"posviz does not know where {lm.family} keeps its token embeddings, so it cannot "
            "split its input representation. Its attention patterns are still available.")
    encoded = encode(lm, text, text_pair)
    token_module = next(m for m in (resolve(lm.model, p) for p in layout.token) if m is not None)
    modules = {
        "token": token_module,
        "segment": resolve(lm.model, layout.segment) if layout.segment else None,
        "position": resolve(lm.model, layout.position) if layout.position else None,
        "normalized": resolve(lm.model, layout.layernorm) if layout.layernorm else None,
    }
    captured: dict[str, torch.Tensor] = {}
    handles = [
        module.register_forward_hook(lambda _m, _i, out, key=key: captured.setdefault(key, out))
        for key, module in modules.items() if module is not None
    ]
    try:
        with torch.no_grad():
            lm.forward_module(**encoded.model_inputs)
    finally:
        for handle in handles:
            handle.remove()
    if layout.token_scale:
        captured["token"] = captured["token"] * resolve(lm.model, layout.token_scale)
    total = captured["token"].to(torch.float32)
    for key in ("segment", "position"):
        if key in captured:
            total = total + captured[key].to(torch.float32)
    return InputEmbeddings(
        tokens=encoded.tokens,
        token=_numpy(captured["token"]),
        segment=_numpy(captured.get("segment")),
        position=_numpy(captured.get("position")),
        sum=_numpy(total),
        normalized=_numpy(captured.get("normalized")),
        truncated=encoded.truncated,
    )
