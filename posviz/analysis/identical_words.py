"""Identical-word inputs: first-layer attention where every token is the same word (Wang et al., ICLR 2021).

All tokens share one content, so what the attention does differently across tokens comes from
positions (and the special tokens around them). Runs the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from posviz.analysis.attention import without_tokens
from posviz.loading import LoadedModel


#: the model's tokenizer writes each copy of it as one and the same token.
COMMON_WORDS = (
    "the of and to in is was for on are with as at by from this that have not but be or an they which "
    "one you were all we her she there can their has more when will would about if out so what up its "
    "time into only new some could these two may then do first any like now over such our man me even "
    "most made after also did many before must through back years where much your way well down should "
    "because each just those people how too little state good very make world still own see men work "
    "long get here between both life being under never day same another know while last might great old "
    "year off come since against go came right used take three house city water music school home food "
    "book river tree cat dog car road door hand night light war money game party church king family"
).split()


@dataclass
class IdenticalWordAttention:
    """First-layer attention on inputs where every token is the same word, averaged over words.

    Attributes
    ----------
    patterns : np.ndarray
        float32 [heads, T, T]: the mean over ``words`` of the layer's attention weights (row =
        query, column = key, each row sums to 1), over the whole input, special tokens included.
    tokens : list of str
        The input of the first word, as the tokenizer writes it ([CLS] cat cat … [SEP]).
    special : np.ndarray
        bool [T]: the tokenizer's special tokens ([CLS], [SEP], <s>, BOS …).
    words : list of str
        The words averaged over.
    layer : int
        0-based layer (0: the first).
    causal : bool
        True when every key after its query has weight 0 (a decoder's mask).
    """

    patterns: np.ndarray
    tokens: list[str]
    special: np.ndarray
    words: list[str]
    layer: int
    causal: bool

    @property
    def length(self) -> int:
        """L, the number of word tokens."""
        return int((~self.special).sum())

    def words_only(self) -> np.ndarray:
        """float32 [heads, L, L]: the word tokens only (special tokens dropped as queries and
        keys), each row renormalised to sum to 1 (:func:`posviz.attention.without_tokens`)."""
        return without_tokens(self.patterns, ~self.special)

    def shown(self, keep_special: bool) -> tuple[np.ndarray, int]:
        """The matrices a view shows, and the position of their row 0.

        Returns
        -------
        matrices : np.ndarray
            float32 [heads, T, T] (``keep_special``: :attr:`patterns`) or [heads, L, L]
            (:meth:`words_only`).
        first : int
            0, or with the special tokens out the position of the first word token.
        """
        if keep_special:
            return self.patterns, 0
        return self.words_only(), int(np.argmax(~self.special))


def _identical_input(tok, word: str, length: int) -> tuple[list[int], list[int]] | None:
    """(ids, special mask) of ``length`` copies of ``word`` where each copy is the same single
    token; None otherwise. Tries "w w … w", then " w w … w" (byte-level BPE writes a first word
    without its leading space differently)."""
    bad = set(tok.all_special_ids)
    for text in (" ".join([word] * length), " " + " ".join([word] * length)):
        enc = tok(text, return_special_tokens_mask=True, truncation=False, verbose=False)
        ids, special = list(enc["input_ids"]), list(enc["special_tokens_mask"])
        body = {i for i, s in zip(ids, special) if not s}
        if len(body) == 1 and len(ids) - sum(special) == length and not body & bad:
            return ids, special
    return None


def max_identical_length(lm: LoadedModel) -> int:
    """The longest identical-word input, in word tokens, that fits the model: its
    :attr:`LoadedModel.max_tokens` less the special tokens its tokenizer adds to one sequence."""
    enc = lm.tokenizer("the", return_special_tokens_mask=True)
    return lm.max_tokens - int(sum(enc["special_tokens_mask"]))


def identical_word_attention(lm: LoadedModel, words: Sequence[str] | int = 16, length: int = 64, *,
                             layer: int = 0, batch_size: int = 16) -> IdenticalWordAttention:
    """Attention of one layer on "identical word" inputs (Wang et al., ICLR 2021), averaged over words.

    For each word w the input is ``length`` copies of w, tokenized by the model's own tokenizer
    with its own special tokens around them (``"w w … w"``; ``" w w … w"`` where the first copy
    would otherwise differ). A word is used only if every copy becomes the same single token
    that is not a special token, and every used word gives the same special-token layout. All
    tokens share one content, so differences between attention weights come from positions (and
    from the special tokens). The model runs once per word (in batches, no padding) with
    ``output_attentions=True`` (eager attention; the encoder of an encoder-decoder model), and
    the weights of ``layer`` are averaged over words.

    Parameters
    ----------
    lm : LoadedModel
    words : sequence of str or int
        The words, or how many of :data:`COMMON_WORDS` to use (the first that qualify).
    length : int
        L, word tokens per input (≥ 3); special tokens come on top and the whole input must fit
        :attr:`LoadedModel.max_tokens`.
    layer : int
        0-based layer.
    batch_size : int
        Inputs per forward pass.

    Returns
    -------
    IdenticalWordAttention

    Raises
    ------
    ValueError
        When ``length`` < 3, the input would not fit the model, no word qualifies, or ``layer``
        is out of range.
    """
    if length < 3:
        raise ValueError(f"length must be at least 3 word tokens, not {length}")
    candidates = list(COMMON_WORDS) if isinstance(words, int) else list(words)
    wanted = words if isinstance(words, int) else len(candidates)
    used, inputs, layout = [], [], None
    for word in candidates:
        if len(used) == wanted:
            break
        found = _identical_input(lm.tokenizer, word, length)
        if found is None or (layout is not None and found[1] != layout):
            continue
        layout = found[1] if layout is None else layout
        used.append(word)
        inputs.append(found[0])
    if not used:
        raise ValueError("No word is a single token repeated identically for this tokenizer; try other words.")
    if len(inputs[0]) > lm.max_tokens:
        raise ValueError(f"{length} words and {len(inputs[0]) - length} special tokens make {len(inputs[0])} "
                         f"tokens, more than the model's {lm.max_tokens} positions.")
    if not 0 <= layer < lm.num_layers:
        raise ValueError(f"layer must be in 0..{lm.num_layers - 1}, not {layer}")
    ids = torch.tensor(inputs, dtype=torch.long, device=lm.device)
    total = None
    with torch.no_grad():
        for start in range(0, len(inputs), batch_size):
            batch = ids[start:start + batch_size]
            out = lm.forward_module(input_ids=batch, attention_mask=torch.ones_like(batch), output_attentions=True)
            summed = out.attentions[layer].to(torch.float64).sum(dim=0)
            total = summed if total is None else total + summed
    patterns = (total / len(inputs)).cpu().numpy().astype(np.float32)
    causal = bool(np.all(np.triu(patterns, 1) == 0))
    return IdenticalWordAttention(patterns=patterns, tokens=lm.tokenizer.convert_ids_to_tokens(inputs[0]),
                                  special=np.array(layout, dtype=bool), words=used, layer=layer, causal=causal)
