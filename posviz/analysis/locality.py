"""Scores of attention matrices: Chen et al.'s locality and symmetry, with Wang et al.'s three properties.

Chen, Varoquaux & Suchanek, "The Locality and Symmetry of Positional Encodings" (EMNLP Findings
2023), give code-level scores for an L × L attention matrix (``locality_symmetry/calculate.py`` of
their repository): :func:`locality` and :func:`attention_symmetry` reproduce them, edge cases
included. :func:`attention_scores` gives those two and the three properties of
:mod:`posviz.analysis.properties` for every head. Pure numpy: no model runs here.
"""

from __future__ import annotations

import numpy as np

from posviz.analysis.properties import as_square, monotonicity, symmetry, translation_invariance


def locality(M) -> float:
    """Chen, Varoquaux & Suchanek's (2023) locality of an attention matrix.

        locality = (1/L) Σ_i Σ_j M[i, j] · 2^(−|i − j|)

    as ``matrix_locality`` in their ``locality_symmetry/calculate.py``. For attention (rows sum
    to 1) it lies in (0, 1]: 1 for the identity (each token attends only to itself), 1/2 for a
    token attending only to a neighbour.

    Parameters
    ----------
    M : array-like
        [L, L] attention weights, row = query, column = key.

    Returns
    -------
    float
        Unitless.

    Raises
    ------
    ValueError
        When ``M`` is not square or empty.
    """
    M = as_square(M)
    L = M.shape[0]
    if L == 0:
        raise ValueError("empty matrix")
    distance = np.abs(np.arange(L)[:, None] - np.arange(L)[None, :])
    return float(np.sum(M * 0.5 ** distance) / L)


def attention_symmetry(M) -> float:
    """Chen, Varoquaux & Suchanek's (2023) symmetry of an attention matrix.

    For each row i with m = min(i, L − 1 − i) ≥ 1 (the first and last rows are skipped), the
    differences d_i(t) = |M[i, i − t] − M[i, i + t]|, t = 1 … m, are min-max scaled within the
    row, s_i(t) = (d_i(t) − min_t d_i) / (max_t d_i − min_t d_i), and a row whose differences are
    all equal (always the case with a single pair, m = 1) gets s_i(t) = 0, as scikit-learn's
    ``MinMaxScaler`` does. Then

        symmetry = 1 − (Σ_i Σ_t s_i(t)) / (Σ_i m_i),

    the mean over all (i, t) pairs pooled, exactly as ``cal_matrix_symmetry`` in their
    ``locality_symmetry/calculate.py`` (it extends one list with every row's scaled values). The
    scaling makes it relative: any row with unequal differences contributes a 1 at its largest
    one, so the score says how concentrated the asymmetry is, not how large it is.

    Parameters
    ----------
    M : array-like
        [L, L] attention weights, row = query, column = key.

    Returns
    -------
    float
        In [0, 1] (unitless); 1 for any matrix symmetric about each row's diagonal cell.

    Raises
    ------
    ValueError
        When ``M`` is not square or L < 3 (no row has a key on both sides; their code divides by 0).
    """
    M = as_square(M)
    L = M.shape[0]
    if L < 3:
        raise ValueError(f"attention symmetry needs at least 3 positions, not {L}")
    total, count = 0.0, 0
    for i in range(1, L - 1):
        m = min(i, L - 1 - i)
        t = np.arange(1, m + 1)
        d = np.abs(M[i, i - t] - M[i, i + t])
        low, high = d.min(), d.max()
        if high > low:
            total += float(np.sum((d - low) / (high - low)))
        count += m
    return 1.0 - total / count


def position_only_attention(P) -> np.ndarray:
    """Attention of positions alone with identity projections: ``softmax_rows(P·Pᵀ / √d)``.

    The reference beside a model's identical-word attention: what a head would do if its query
    and key were the position vector itself (e.g. the sinusoid of the model's width).

    Parameters
    ----------
    P : array-like
        [L, d] position vectors.

    Returns
    -------
    np.ndarray
        float64 [L, L], each row sums to 1.
    """
    P = np.asarray(P, dtype=np.float64)
    scores = P @ P.T / np.sqrt(P.shape[1])
    scores -= scores.max(axis=1, keepdims=True)
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


#: The scores :func:`attention_scores` returns, in order, with their names for tables.
ATTENTION_SCORES = {
    "locality": "locality (Chen)",
    "attention_symmetry": "symmetry (Chen)",
    "monotonicity": "monotonicity ρ",
    "translation_invariance": "translation invariance η²",
    "symmetry": "symmetry S",
}


def attention_scores(M, causal: bool = False) -> dict[str, np.ndarray]:
    """Chen et al.'s two scores and Wang et al.'s three properties of attention matrices.

    Parameters
    ----------
    M : array-like
        [heads, L, L] (or [L, L]) attention weights, row = query, column = key.
    causal : bool
        A decoder's attention: keys after the query are masked, so monotonicity is read on the
        "before" side (a query looking k positions back) and translation invariance leaves the
        masked cells out; symmetry S is computed on the weights as they are (0 for a causal
        matrix). Otherwise monotonicity uses both sides (|k|).

    Returns
    -------
    dict of str to np.ndarray
        Keys of :data:`ATTENTION_SCORES`, each float64 [heads] (a 0-d array for one matrix).
    """
    M = np.asarray(M, dtype=np.float64)
    single = M.ndim == 2
    M = M[None] if single else M
    out = {name: [] for name in ATTENTION_SCORES}
    for head in M:
        masked = head.copy()
        if causal:
            masked[np.triu_indices(head.shape[0], 1)] = np.nan
        out["locality"].append(locality(head))
        out["attention_symmetry"].append(attention_symmetry(head))
        out["monotonicity"].append(monotonicity(masked, side="before" if causal else "both"))
        out["translation_invariance"].append(translation_invariance(masked))
        out["symmetry"].append(symmetry(head))
    return {name: np.asarray(values[0] if single else values) for name, values in out.items()}


def head_scores(matrices, causal: bool = False) -> dict[str, np.ndarray]:
    """:func:`attention_scores` of every head of a layer and, last, of the heads' mean matrix.

    Parameters
    ----------
    matrices : array-like
        [heads, L, L] attention weights.
    causal : bool
        As for :func:`attention_scores`.

    Returns
    -------
    dict of str to np.ndarray
        Keys of :data:`ATTENTION_SCORES`, each float64 [heads + 1].
    """
    matrices = np.asarray(matrices)
    return attention_scores(np.concatenate([matrices, matrices.mean(axis=0, keepdims=True)]), causal)
