"""Which tokens a model must map to the same vector in two orders, from its structure alone.

Self-attention compares tokens by content and the feed-forward layers treat each token on its
own, so a bidirectional encoder without positions is permutation-equivariant; a causal one is not.
:func:`structural_matches` says exactly which tokens must match, layer by layer, whatever the
weights: the prediction the word-order comparison (:mod:`posviz.analysis.word_order`) is checked
against.
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

import numpy as np

from posviz.analysis.permutations import inverse_permutation, permute


def structural_matches(columns: Sequence[tuple], permutation: Sequence[int], *, causal: bool, positional: bool,
                       layers: int) -> np.ndarray:
    """Which tokens a model must map to the same vector in both runs, layer by layer, from its
    structure alone (whatever its weights).

    A layer's output at one place is a function of what the place holds and of the multiset of
    what the places it attends to hold (every token for a bidirectional model, the places up to
    itself for a causal one); with positions, each place also carries its position, which makes
    that multiset a sequence. Two places whose inputs and contexts are equal, recursively through
    the layers, get equal vectors. This is computed exactly, by canonical numbering of each
    place's context, layer after layer.

    Consequences: without positions every token of a bidirectional model matches in every layer.
    In a causal model token j matches after the first layer when the first j + 1 places hold the
    same tokens (in any order) in both runs, but after two or more layers only when they hold
    them in the same order, because the places it attends to then carry their own, different,
    prefixes: a deeper causal model is not permutation-equivariant even without positions.

    Parameters
    ----------
    columns : sequence of tuple
        What the model is given at each place of the original run (token id, segment id, mask).
    permutation : sequence of int
        Permuted place i holds original place ``permutation[i]``.
    causal : bool
        Each place attends to itself and the places before it only.
    positional : bool
        The model knows the position of each place (absolute or relative: a sufficient condition
        either way).
    layers : int
        Layers to follow.

    Returns
    -------
    np.ndarray
        bool [layers + 1, num_tokens]: row l is after l layers (row 0: the input tokens), column j
        the original token j (compared with where it went in the permuted run). Rows never gain a
        True as l grows.
    """
    n = len(columns)
    where = inverse_permutation(permutation)
    numbers: dict = {}

    def canon(value) -> int:
        return numbers.setdefault(value, len(numbers))

    def start(cols):
        return [canon((c, i) if positional else (c,)) for i, c in enumerate(cols)]

    def step(sig: list[int]) -> list[int]:
        if not causal:
            whole = frozenset(Counter(sig).items())
            return [canon((s, whole)) for s in sig]
        seen: Counter = Counter()
        out = []
        for s in sig:
            seen[s] += 1
            out.append(canon((s, frozenset(seen.items()))))
        return out

    original, permuted = start(list(columns)), start(permute(list(columns), permutation))
    # Tokens whose whole visible context is the same sequence match in every layer (a floor)
    same = [columns[i] == columns[p] for i, p in enumerate(permutation)]
    if causal:
        prefix = np.cumprod(same).astype(bool)
        floor = np.array([prefix[j] for j in range(n)]) & (where == np.arange(n))
    else:
        floor = np.full(n, all(same))
    rows = [np.array([original[j] == permuted[where[j]] for j in range(n)])]
    for _ in range(layers):
        if np.array_equal(rows[-1], floor):  # nothing left that can change
            rows.append(rows[-1].copy())
            continue
        original, permuted = step(original), step(permuted)
        rows.append(np.array([original[j] == permuted[where[j]] for j in range(n)]))
    return np.array(rows, dtype=bool).reshape(layers + 1, n)
