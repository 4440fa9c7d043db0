"""The absolute-position probe on each layer's hidden states (Wang & Chen, EMNLP 2020, applied per layer).

How readable the position of a token is as it goes through the model: one probe per layer, the
embedding output being layer 0. It works for every scheme, including those without a position
vector (rotary, ALiBi, relative bias), since it reads what the layers compute. The built-in text
is the opening chapter of Jane Austen's "Pride and Prejudice" (1813, public domain), in
``posviz/data``: about 1 100 WordPiece tokens, more than the 512 positions of BERT-sized models.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from posviz.analysis.probes import absolute_position_probe
from posviz.loading import LoadedModel
from posviz.tokenization import encode

#: The opening chapter of "Pride and Prejudice": longer than most models' positions (truncated to fit).
BUILTIN_TEXT = (Path(__file__).resolve().parents[1] / "data" / "pride-and-prejudice-chapter-1.txt").read_text(
    encoding="utf-8")


@dataclass(frozen=True)
class LayerProbeResult:
    """The absolute probe on the hidden states of one text, one probe per layer.

    Attributes
    ----------
    tokens : list of str
        The tokens probed (special tokens included); token t is at position t.
    mae : np.ndarray
        float64 [layers + 1]: MAE of the rounded prediction (positions) for layer 0 (the
        embedding output) to the last layer.
    predictions : np.ndarray
        float64 [layers + 1, num_tokens]: the cross-validated prediction of each token's position.
    states : np.ndarray or None
        float32 [layers + 1, num_tokens, width]: the features probed, ``hidden_states`` of the
        model's own forward; None where the caller dropped them.
    truncated : int
        Tokens of the text dropped to fit the model.
    folds : int
    seed : int
    regression : str
    """

    tokens: list[str]
    mae: np.ndarray
    predictions: np.ndarray
    states: np.ndarray | None
    truncated: int
    folds: int
    seed: int
    regression: str = "linear"

    def without_states(self) -> "LayerProbeResult":
        """The same result without the hidden states (the large part), e.g. to keep it in a cache."""
        return replace(self, states=None)


def hidden_states(lm: LoadedModel, text: str) -> tuple[list[str], np.ndarray, int]:
    """The hidden states of every layer for ``text``, from the model's own forward.

    ``output_hidden_states=True`` on :attr:`LoadedModel.forward_module` (the encoder of an
    encoder-decoder model): entry 0 is the embedding output (BERT: after the embedding LayerNorm),
    entry l the output of layer l (the last one as the model returns it, e.g. after GPT-2's final
    LayerNorm).

    Returns
    -------
    tokens : list of str
    states : np.ndarray
        float32 [layers + 1, num_tokens, width].
    truncated : int
        Tokens dropped to fit :attr:`LoadedModel.max_tokens`.

    Raises
    ------
    ValueError
        When ``text`` is empty.
    """
    encoded = encode(lm, text)
    with torch.no_grad():
        out = lm.forward_module(**encoded.model_inputs, output_hidden_states=True)
    states = torch.stack([h[0] for h in out.hidden_states]).to(torch.float32).cpu().numpy()
    return encoded.tokens, states, encoded.truncated


def layer_position_probe(lm: LoadedModel, text: str | None = None, folds: int = 5, seed: int = 0,
                         regression: str = "linear") -> LayerProbeResult:
    """The absolute-position probe on each layer's hidden states of one text.

    The text is tokenized as the other views do (special tokens included, truncated to the
    model's length); token t is at position t. For each entry of :func:`hidden_states`, the
    :func:`absolute_position_probe` reads the tokens' positions from their vectors. A low MAE at
    layer l: position is linearly readable there. Unlike the table probes, this works for every
    positional scheme (rotary, ALiBi and relative bias add no vector at the input, so their layer
    0 holds no position, unless a causal mask lets later layers infer it).

    Parameters
    ----------
    lm : LoadedModel
    text : str, optional
        Defaults to :data:`BUILTIN_TEXT` (enough for 512 positions and more).
    folds, seed : int
    regression : {"linear", "ridge"}
        As :func:`absolute_position_probe`.

    Returns
    -------
    LayerProbeResult

    Raises
    ------
    ValueError
        For an empty text, or one of fewer tokens than folds.
    """
    tokens, states, truncated = hidden_states(lm, BUILTIN_TEXT if text is None else text)
    if len(tokens) < folds:
        raise ValueError(f"{len(tokens)} tokens are too few for {folds}-fold cross-validation: "
                         f"type a longer text (at least {folds} tokens; a few dozen for a meaningful probe)")
    probes = [absolute_position_probe(layer, folds=folds, seed=seed, regression=regression) for layer in states]
    return LayerProbeResult(tokens=tokens, mae=np.array([p.score for p in probes]),
                            predictions=np.stack([p.predictions for p in probes]), states=states,
                            truncated=truncated, folds=folds, seed=seed, regression=regression)
