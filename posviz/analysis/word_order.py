"""Word order: a sentence beside a permutation of its words, with and without positional information.

A transformer without positional information sees its input as a multiset of tokens: self-attention
and the feed-forward layers treat every token alike, so permuting the input only permutes the
output (the encoder is *permutation-equivariant*). Positions are what break this symmetry. This
module runs a model on a sentence and on a permutation of its words, puts the permuted run's
vectors back in the original order, and measures how far they are from the original run's, with
the model's positions in place or taken out by forward hooks (each scheme's ``removal``, see
:meth:`posviz.families.Family.removal`).

Only the content tokens are permuted: special tokens ([CLS], [SEP], <s>, </s> …) stay where the
tokenizer put them, and the tokens of one word keep their order (a word moves as a block). The
model reads the permuted *token ids* (not the permuted text tokenized again), so both runs hold
exactly the same tokens.

Causal (decoder-only) models are not permutation-equivariant even without positions: token i sees
tokens 0 .. i only, and permuting changes that prefix. What holds there is narrower, and
:attr:`WordOrderComparison.must_match` says which tokens it covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from posviz.analysis.equivariance import structural_matches
from posviz.analysis.input_representation import input_sum, record_parts
from posviz.analysis.permutations import permute, token_permutation, unpermute
from posviz.hooks import Patch
from posviz.loading import LoadedModel
from posviz.positions import PositionRemovalError
from posviz.tokenization import encode, split_words

#: The three stages a comparison holds, for :meth:`WordOrderComparison.stage`.
STAGES = {
    "input": "input representation",
    "first": "first layer",
    "output": "last layer",
}


@dataclass
class WordOrderComparison:
    """A sentence and a permutation of its words, run through the model, token by token.

    Every ``*_permuted`` array is put back in the original order
    (:func:`~posviz.analysis.permutations.unpermute`): row j is what original token j became in the
    permuted run, so it lines up with row j of the ``*_original`` array.

    Attributes
    ----------
    tokens : list of str
        Tokens in the original order, special tokens included.
    permuted_tokens : list of str
        Tokens in the order the model read them in the permuted run.
    words : list of str
        The words of the sentence (:func:`posviz.tokenization.split_words`).
    order : list of int
        ``order[k]`` = the original word placed k-th.
    permutation : np.ndarray
        int64 [num_tokens]: permuted place i holds original token ``permutation[i]``; special
        tokens are fixed points.
    without_positions : bool
        Both runs had the positional information removed (the family's :meth:`~posviz.families.Family.removal`).
    removed : list of str
        What was removed, one line per hook (empty with positions).
    input_original, input_permuted : np.ndarray
        float32 [num_tokens, width]: the input representation, token + segment + position
        embeddings summed, before any LayerNorm (the position part is 0 without positions; for
        rotary, ALiBi and relative-bias models there is no position part at all). For a family
        whose token module posviz does not know: the model's ``hidden_states[0]``.
    first_original, first_permuted : np.ndarray
        float32 [num_tokens, hidden]: the first layer's output (``hidden_states[1]``).
    output_original, output_permuted : np.ndarray
        float32 [num_tokens, hidden]: the last layer's hidden states (``last_hidden_state``; the
        encoder's for an encoder-decoder model, after its final norm where it has one).
    causal : bool
        The model's attention is causal (every weight above the diagonal of its first layer is
        exactly 0): token i sees tokens 0 .. i only.
    num_layers : int
        Layers the model ran (``len(hidden_states) - 1``).
    must_match_input, must_match_first, must_match : np.ndarray
        bool [num_tokens]: tokens whose vector must be the same in both runs by the model's
        structure alone, at the input, after the first layer and after the last
        (:func:`~posviz.analysis.equivariance.structural_matches`). Other tokens may still match by coincidence.
    truncated : int
        Tokens dropped so the input fits the model.
    """

    tokens: list[str]
    permuted_tokens: list[str]
    words: list[str]
    order: list[int]
    permutation: np.ndarray
    without_positions: bool
    removed: list[str]
    input_original: np.ndarray
    input_permuted: np.ndarray
    first_original: np.ndarray
    first_permuted: np.ndarray
    output_original: np.ndarray
    output_permuted: np.ndarray
    causal: bool
    num_layers: int
    must_match_input: np.ndarray
    must_match_first: np.ndarray
    must_match: np.ndarray
    truncated: int

    @property
    def permuted_words(self) -> list[str]:
        """The words in the permuted order."""
        return [self.words[k] for k in self.order]

    def stage(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(original, permuted, must_match)`` of one of :data:`STAGES` ("input", "first", "output").

        Raises
        ------
        ValueError
            For another name.
        """
        if name not in STAGES:
            raise ValueError(f"Unknown stage {name!r}; expected one of {', '.join(STAGES)}.")
        if name == "input":
            return self.input_original, self.input_permuted, self.must_match_input
        if name == "first":
            return self.first_original, self.first_permuted, self.must_match_first
        return self.output_original, self.output_permuted, self.must_match

    def l2(self, name: str = "output") -> np.ndarray:
        """float64 [num_tokens]: Euclidean norm of the difference of each token's two vectors at a
        stage (the model's units)."""
        a, b, _ = self.stage(name)
        return np.linalg.norm(b.astype(np.float64) - a, axis=1)

    def max_difference(self, name: str = "output", must_match_only: bool = False) -> float:
        """The largest |difference| of one component of one token's two vectors at a stage, over
        all tokens or over the ``must_match`` ones only (NaN where there is none)."""
        a, b, must = self.stage(name)
        diff = np.abs(b - a)
        if must_match_only:
            diff = diff[must]
        return float(diff.max()) if diff.size else float("nan")

    @property
    def max_abs_difference(self) -> float:
        """The largest |difference| of one component of one token's last-layer vector between the two
        runs, over all tokens (the model's units; float32 rounding leaves about 1e-7 × the values)."""
        return self.max_difference("output")

    @property
    def max_abs_difference_input(self) -> float:
        """The same for the input representation."""
        return self.max_difference("input")


def _run(lm: LoadedModel, inputs: dict[str, torch.Tensor], patches: Sequence[Patch]
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool, int]:
    """One forward pass with ``patches`` applied: (input representation [n, width], first layer
    [n, hidden], last hidden state [n, hidden], causal, layers)."""
    captured, out = record_parts(lm, inputs, patches, output_attentions=True, output_hidden_states=True)

    def rows(t: torch.Tensor) -> torch.Tensor:  # [1, n, d] or [n, d] (Marian's positions) -> [n, d]
        return (t[0] if t.dim() == 3 else t).to(torch.float32)

    total = rows(input_sum(captured) if "token" in captured else out.hidden_states[0])
    attentions = getattr(out, "attentions", None)  # None, or absent: a model without attention (Mamba)
    first = attentions[0] if attentions else None
    causal = bool(first is not None and first.shape[-1] > 1 and (torch.triu(first[0], 1) == 0).all())
    return (total.cpu().numpy(), rows(out.hidden_states[1]).cpu().numpy(), rows(out.last_hidden_state).cpu().numpy(),
            causal, len(out.hidden_states) - 1)


def removal_refused(lm: LoadedModel) -> str | None:
    """Why the model's positional information cannot be taken out (:meth:`posviz.families.Family.removal`
    raised :class:`~posviz.positions.PositionRemovalError`: its message), or None where it can."""
    try:
        lm.family.removal(lm.model)
    except PositionRemovalError as exc:
        return str(exc)
    return None


def compare_orders(lm: LoadedModel, text: str, order: Sequence[int], without_positions: bool = False
                   ) -> WordOrderComparison:
    """Run ``text`` and its words in ``order`` through the model and line the results up token by token.

    The permuted run gets the original run's inputs (token ids, segment ids, attention mask)
    reordered by :func:`~posviz.analysis.permutations.token_permutation` (special tokens stay; a
    word's tokens move together), so both runs hold the same tokens. Its vectors are then put back
    in the original order. With ``without_positions`` both runs are made with the family's position removal patched in
    (:meth:`posviz.families.Family.removal`, through :func:`posviz.hooks.hooked`).

    A bidirectional model (BERT, the encoder of T5 or BART …) is then permutation-equivariant:
    BERT's segment embedding is the same for every token of one sentence, so the only difference
    between the runs is the order of the tokens, and each token's vectors must be equal up to
    float rounding (``max_abs_difference`` ≈ 2e-6 for all-MiniLM-L6-v2), while with positions
    they differ (≈ 1). A causal model matches without positions only where
    :attr:`WordOrderComparison.must_match_first` / ``must_match`` say (see
    :func:`~posviz.analysis.equivariance.structural_matches`).

    Parameters
    ----------
    lm : LoadedModel
    text : str
        One sentence (no second segment).
    order : sequence of int
        ``order[k]`` = the original word placed k-th, a permutation of ``0 .. num_words - 1``
        (:mod:`posviz.analysis.permutations`; words as
        :func:`posviz.tokenization.split_words` gives them).
    without_positions : bool
        Remove the positional information in both runs.

    Returns
    -------
    WordOrderComparison

    Raises
    ------
    ValueError
        When ``text`` is empty or ``order`` is not a permutation of its words.
    posviz.positions.PositionRemovalError
        With ``without_positions``, for a model whose positions cannot be hooked (ALiBi,
        DeBERTa, unknown families), before anything runs.
    """
    split = split_words(lm, text)
    permutation = token_permutation(split.word_of, order)
    inputs = encode(lm, text).model_inputs
    permuted_inputs = {k: permute(v, permutation, axis=1) for k, v in inputs.items()}
    patches = lm.family.removal(lm.model) if without_positions else []
    first, second = _run(lm, inputs, patches), _run(lm, permuted_inputs, patches)
    (input_a, first_a, output_a, causal, layers), (input_b, first_b, output_b, _, _) = first, second
    columns = list(zip(*(v[0].tolist() for v in inputs.values())))
    positional = not without_positions and lm.family.positional
    matches = structural_matches(columns, permutation, causal=causal, positional=positional, layers=layers)
    input_has_position = positional and lm.family.input_positions is not None
    return WordOrderComparison(
        tokens=split.tokens,
        permuted_tokens=permute(split.tokens, permutation),
        words=split.words,
        order=[int(k) for k in order],
        permutation=permutation,
        without_positions=without_positions,
        removed=[patch.description for patch in patches],
        input_original=input_a,
        input_permuted=unpermute(input_b, permutation),
        first_original=first_a,
        first_permuted=unpermute(first_b, permutation),
        output_original=output_a,
        output_permuted=unpermute(output_b, permutation),
        causal=causal,
        num_layers=layers,
        must_match_input=(permutation == np.arange(len(permutation))) if input_has_position
        else np.ones(len(permutation), dtype=bool),
        must_match_first=matches[min(1, layers)],
        must_match=matches[-1],
        truncated=split.truncated,
    )
