"""Permutations of a sentence's words: build them, apply them to tokens, ids and vectors, undo them.

Pure functions of integer sequences (no model): the word-order comparison
(:mod:`posviz.analysis.word_order`) moves a sentence's words with them, as blocks of tokens, and
puts the permuted run's vectors back in the original order.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np
import torch

#: The ways to permute the words the app offers: name -> words.
PERMUTATIONS = {
    "reverse": "reverse the words",
    "swap": "swap two words",
    "shuffle": "a random shuffle (seeded)",
    "custom": "your own order",
}


def inverse_permutation(permutation: Sequence[int]) -> np.ndarray:
    """The permutation that undoes ``permutation``.

    Parameters
    ----------
    permutation : sequence of int
        A permutation of ``0 .. n - 1``.

    Returns
    -------
    np.ndarray
        int64 [n], ``inverse[permutation[i]] = i``.

    Raises
    ------
    ValueError
        When ``permutation`` is not a permutation of ``0 .. n - 1``.
    """
    perm = np.asarray(permutation, dtype=np.int64)
    if perm.ndim != 1 or not np.array_equal(np.sort(perm), np.arange(len(perm))):
        raise ValueError(f"Not a permutation of 0 .. {len(perm) - 1}: {perm.tolist()}")
    inverse = np.empty_like(perm)
    inverse[perm] = np.arange(len(perm))
    return inverse


def permute(items, permutation: Sequence[int], axis: int = 0):
    """Reorder ``items`` so that place i holds ``items[permutation[i]]``.

    Parameters
    ----------
    items : list, tuple, np.ndarray or torch.Tensor
        Tokens, ids or vectors; arrays and tensors are reordered along ``axis`` (use ``axis=1``
        for the [1, n] tensors a tokenizer returns).
    permutation : sequence of int
        A permutation of ``0 .. n - 1`` (n = length of ``items`` along ``axis``).
    axis : int

    Returns
    -------
    Same type as ``items`` (a list for a list or tuple).
    """
    perm = np.asarray(permutation, dtype=np.int64)
    if isinstance(items, torch.Tensor):
        return items.index_select(axis, torch.as_tensor(perm, device=items.device))
    if isinstance(items, np.ndarray):
        return np.take(items, perm, axis=axis)
    return [items[i] for i in perm]


def unpermute(items, permutation: Sequence[int], axis: int = 0):
    """Undo :func:`permute`: ``unpermute(permute(x, p), p) == x``.

    For the vectors of a permuted run, row j of the result is what original token j became.
    """
    return permute(items, inverse_permutation(permutation), axis=axis)


def reverse_words(num_words: int) -> list[int]:
    """The words back to front: ``[n - 1, …, 1, 0]``."""
    return list(range(num_words - 1, -1, -1))


def swap_words(num_words: int, i: int, j: int) -> list[int]:
    """Words ``i`` and ``j`` (0-based) swapped, the others in place.

    Raises
    ------
    ValueError
        When ``i`` or ``j`` is not a word index.
    """
    for k in (i, j):
        if not 0 <= k < num_words:
            raise ValueError(f"Word {k} does not exist: the sentence has words 0 to {num_words - 1}.")
    order = list(range(num_words))
    order[i], order[j] = order[j], order[i]
    return order


def shuffle_words(num_words: int, seed: int = 0) -> list[int]:
    """A random order of the words, ``numpy.random.default_rng(seed).permutation``: the same seed
    gives the same order. It may leave some words in place (for two words, half the seeds do)."""
    return [int(k) for k in np.random.default_rng(seed).permutation(num_words)]


def parse_order(text: str, num_words: int) -> list[int]:
    """A user-typed order: 0-based word indices separated by spaces or commas, e.g. ``"4 1 2 3 0"``.

    Returns
    -------
    list of int
        ``order[k]`` = the original word placed k-th.

    Raises
    ------
    ValueError
        When the text holds something other than integers, or is not a permutation of
        ``0 .. num_words - 1`` (each index exactly once); the message says what is wrong.
    """
    parts = text.replace(",", " ").split()
    try:
        order = [int(p) for p in parts]
    except ValueError:
        raise ValueError(f"Give word indices as whole numbers separated by spaces, e.g. "
                         f"{' '.join(map(str, reverse_words(num_words)))}.") from None
    if sorted(order) != list(range(num_words)):
        missing = sorted(set(range(num_words)) - set(order))
        repeated = sorted(k for k, c in Counter(order).items() if c > 1)
        wrong = sorted(k for k in set(order) if not 0 <= k < num_words)
        problems = ([f"missing {missing}"] if missing else []) + ([f"repeated {repeated}"] if repeated else []) + (
            [f"no such word {wrong}"] if wrong else [])
        raise ValueError(f"The order must name each word 0 to {num_words - 1} exactly once ({'; '.join(problems)}).")
    return order


def token_permutation(word_of: Sequence[int | None], order: Sequence[int]) -> np.ndarray:
    """The permutation of the tokens that puts the words in ``order``; special tokens stay.

    Parameters
    ----------
    word_of : sequence of int or None
        Word index of each token (None: a special token, which keeps its place), as in
        :attr:`SentenceWords.word_of`; the tokens of a word are contiguous.
    order : sequence of int
        ``order[k]`` = the original word placed k-th; a permutation of the word indices.

    Returns
    -------
    np.ndarray
        int64 [num_tokens]: permuted place i holds original token ``permutation[i]`` (use with
        :func:`permute` and :func:`unpermute`).

    Raises
    ------
    ValueError
        When ``order`` is not a permutation of the word indices.
    """
    num_words = len({w for w in word_of if w is not None})
    if sorted(order) != list(range(num_words)):
        raise ValueError(f"The order must name each word 0 to {num_words - 1} exactly once, not {list(order)}.")
    groups: list[list[int]] = [[] for _ in range(num_words)]
    for i, w in enumerate(word_of):
        if w is not None:
            groups[w].append(i)
    content = iter(i for w in order for i in groups[w])
    return np.array([i if w is None else next(content) for i, w in enumerate(word_of)], dtype=np.int64)
