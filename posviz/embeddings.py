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


def run_with_parts(lm: LoadedModel, model_inputs: dict[str, torch.Tensor], **forward_kwargs):
    """One forward pass of ``lm.forward_module`` that records what the model's own embedding
    modules output (forward hooks, removed afterwards).

    Parameters
    ----------
    lm : LoadedModel
    model_inputs : dict of str to torch.Tensor
        The forward's inputs (:func:`posviz.encoding.encode`).
    **forward_kwargs
        Passed to the forward (``output_hidden_states=True`` …).

    Returns
    -------
    captured : dict of str to torch.Tensor
        ``"token"`` (scaled as the model scales it, ``token_scale``), and where the model has
        them ``"segment"``, ``"position"``, ``"normalized"`` (the embedding LayerNorm's output);
        each [1, n, d] (Marian's and Pegasus' positions: [n, d]).
    output
        The forward's output.
    """
    layout = lm.layout
    paths = {"token": next((p for p in layout.token if resolve(lm.model, p) is not None), None),
             "segment": layout.segment, "position": layout.position, "normalized": layout.layernorm}
    modules = {key: resolve(lm.model, path) for key, path in paths.items() if path}
    captured: dict[str, torch.Tensor] = {}
    handles = [
        module.register_forward_hook(lambda _m, _i, out, key=key: captured.setdefault(key, out))
        for key, module in modules.items() if module is not None
    ]
    try:
        with torch.no_grad():
            output = lm.forward_module(**model_inputs, **forward_kwargs)
    finally:
        for handle in handles:
            handle.remove()
    if "token" in captured and layout.token_scale:
        captured["token"] = captured["token"] * resolve(lm.model, layout.token_scale)
    return captured, output


def input_sum(lm: LoadedModel, captured: dict[str, torch.Tensor]) -> torch.Tensor:
    """``(token + segment) + position`` in float32, in the model's order of addition
    (``BertEmbeddings.forward``), from :func:`run_with_parts`' record."""
    total = captured["token"].to(torch.float32)
    for key in ("segment", "position"):
        if key in captured:
            total = total + captured[key].to(torch.float32)
    return total


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
        When ``text`` is empty or only whitespace, ``text`` or ``text_pair`` is not valid
        Unicode text (a lone surrogate, :func:`posviz.encoding.check_text`), or the model's
        family is not in the registry (no known token embedding module).
    """
    layout = lm.layout
    if not layout.token:
        raise ValueError(
            f"posviz does not know where {lm.family} keeps its token embeddings, so it cannot "
            "split its input representation. Its attention patterns are still available.")
    encoded = encode(lm, text, text_pair)
    captured, _ = run_with_parts(lm, encoded.model_inputs)
    total = input_sum(lm, captured)
    return InputEmbeddings(
        tokens=encoded.tokens,
        token=_numpy(captured["token"]),
        segment=_numpy(captured.get("segment")),
        position=_numpy(captured.get("position")),
        sum=_numpy(total),
        normalized=_numpy(captured.get("normalized")),
        truncated=encoded.truncated,
    )
