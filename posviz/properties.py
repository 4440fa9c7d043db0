"""Properties of position encodings: monotonicity, translation invariance, symmetry, locality.

Two sources define what is measured here.

- Wang et al., "On Position Embeddings in BERT" (ICLR 2021), state three properties of a
  proximity φ between positions (here a dot product or cosine of position vectors, or an attention
  weight):

  * monotonicity: m > n ⇔ φ(x, x + m) < φ(x, x + n) (nearer positions are closer);
  * translation invariance: φ(x₁, x₁ + m) = … = φ(xₙ, xₙ + m) for every offset m;
  * symmetry: φ(x, y) = φ(y, x).

  They also feed "identical word" inputs (every token the same word) so that first-layer
  attention shows position alone. The paper's own numeric indicators were not available to us:
  each score below is named for what it is (a Spearman correlation, a share of variance, a ratio
  of absolute differences) and is ours, not the paper's.

- Chen, Varoquaux & Suchanek, "The Locality and Symmetry of Positional Encodings" (EMNLP
  Findings 2023), give code-level scores for an L × L attention matrix
  (``locality_symmetry/calculate.py`` of their repository): :func:`locality` and
  :func:`attention_symmetry` reproduce them, edge cases included.

Matrices are ``G[x, y]`` = φ(x, y), rows and columns positions 0 … n − 1 (for attention: row =
query, column = key). NaN cells are masked (a causal model's future keys) and left out of every
score of Wang et al.'s properties. No Streamlit here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch
from scipy import stats

from posviz.attention import without_tokens
from posviz.loading import LoadedModel

__all__ = [
    "ATTENTION_SCORES", "COMMON_WORDS", "IdenticalWordAttention", "PositionProperties", "attention_scores",
    "attention_symmetry", "first_rise", "identical_word_attention", "locality", "max_identical_length",
    "monotonicity", "position_only_attention", "position_properties", "proximity_by_offset", "symmetry",
    "translation_invariance",
]

#: Common English words, tried in this order for identical-word inputs; a word is used only where
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


def _square(G) -> np.ndarray:
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"expected a square [n, n] matrix, not shape {G.shape}")
    return G


def _side(G: np.ndarray, side: str) -> np.ndarray:
    """``G`` read so that cell [x, x + k] is φ(x, x + k) ("after") or φ(x + k, x) ("before")."""
    if side == "after":
        return G
    if side == "before":
        return G.T
    raise ValueError(f"side must be 'after', 'before' or 'both', not {side!r}")


def _nan_stats(values: np.ndarray) -> tuple[float, float, float]:
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return np.nan, np.nan, np.nan
    return float(finite.mean()), float(finite.min()), float(finite.max())


def proximity_by_offset(G, *, signed: bool = False, max_offset: int | None = None,
                        side: str = "after") -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Proximity against offset, with its spread over start positions.

    For each offset k, the values φ(x, x + k) over every start position x where both positions
    exist (the k-th diagonal of ``G``) give a mean ``ḡ(k)`` and a band from their minimum to their
    maximum. A translation-invariant φ has a band of width 0 (Wang et al., ICLR 2021).

    Parameters
    ----------
    G : array-like
        [n, n], ``G[x, y]`` = φ(x, y) (e.g. P·Pᵀ; for attention, row = query, column = key).
        NaN cells are left out.
    signed : bool
        False: k = 1 … K, one side (see ``side``). True: k = −K … K including 0, ``G[x, x + k]``:
        k > 0 is the key after the query, k < 0 before it.
    max_offset : int, optional
        K; n − 1 (every offset) by default.
    side : {"after", "before"}
        Unsigned only: "after" reads ``G[x, x + k]`` (the upper diagonals), "before" reads
        ``G[x + k, x]`` (the lower ones: a query looking k positions back).

    Returns
    -------
    offsets : np.ndarray
        int64 [K] (or [2K + 1] when signed).
    mean, low, high : np.ndarray
        float64, same length: mean, minimum and maximum of φ(x, x + k) over x, in the units of
        ``G``. NaN where a diagonal is entirely masked.

    Raises
    ------
    ValueError
        When ``G`` is not square, has fewer than 2 rows, or ``max_offset`` is out of 1 … n − 1.
    """
    G = _square(G)
    n = G.shape[0]
    if n < 2:
        raise ValueError("need at least 2 positions")
    K = n - 1 if max_offset is None else int(max_offset)
    if not 1 <= K <= n - 1:
        raise ValueError(f"max_offset must be in 1..{n - 1}, not {max_offset}")
    if signed:
        offsets = np.arange(-K, K + 1)
        source = G
    else:
        offsets = np.arange(1, K + 1)
        source = _side(G, side)
    rows = np.array([_nan_stats(np.diagonal(source, k)) for k in offsets]).reshape(-1, 3)
    return offsets.astype(np.int64), rows[:, 0], rows[:, 1], rows[:, 2]


def first_rise(mean: np.ndarray, offsets: np.ndarray | None = None) -> int | None:
    """The first offset k where the mean proximity rises again: ḡ(k + 1) > ḡ(k).

    Parameters
    ----------
    mean : np.ndarray
        [K], ``ḡ`` at consecutive offsets (from :func:`proximity_by_offset`).
    offsets : np.ndarray, optional
        The offset of each entry; 1 … K by default.

    Returns
    -------
    int or None
        k, or None when ``ḡ`` never rises (perfectly monotone). For the sinusoid of width 512 or
        768 over 512 positions it is 43: ḡ(44) > ḡ(43).
    """
    offsets = np.arange(1, len(mean) + 1) if offsets is None else np.asarray(offsets)
    rises = np.flatnonzero(np.diff(np.asarray(mean, dtype=np.float64)) > 0)
    return int(offsets[rises[0]]) if rises.size else None


def monotonicity(G, max_offset: int | None = None, side: str = "after") -> float:
    """Monotonicity score: Spearman's ρ between the offset k and the mean proximity ḡ(k).

    ``ρ = spearmanr(k, ḡ(k))`` over k = 1 … K, with ``ḡ(k)`` the mean of φ(x, x + k) over every
    start position x (:func:`proximity_by_offset`), computed with ``scipy.stats.spearmanr``.
    Wang et al.'s monotonicity (m > n ⇔ φ(x, x + m) < φ(x, x + n)) holds for the mean exactly
    when ρ = −1; ρ near 0 means proximity does not fall with distance. The sinusoid of width 768
    over 512 positions gives −0.9844 (reference, section 3).

    Parameters
    ----------
    G : array-like
        [n, n] proximity; NaN cells are left out.
    max_offset : int, optional
        K; n − 1 by default.
    side : {"after", "before", "both"}
        "after": φ(x, x + k); "before": φ(x + k, x) (a causal model's query looking back);
        "both": ḡ over the signed offsets ±k, correlated with |k| (for a symmetric ``G`` the same
        ρ as "after").

    Returns
    -------
    float
        ρ in [−1, 1] (unitless); NaN when fewer than 3 offsets have a finite mean or ḡ is constant.

    Raises
    ------
    ValueError
        As :func:`proximity_by_offset`, or for an unknown ``side``.
    """
    if side == "both":
        offsets, mean, _, _ = proximity_by_offset(G, signed=True, max_offset=max_offset)
        keep = offsets != 0
        offsets, mean = np.abs(offsets[keep]), mean[keep]
    else:
        offsets, mean, _, _ = proximity_by_offset(G, max_offset=max_offset, side=side)
    finite = np.isfinite(mean)
    if finite.sum() < 3 or np.ptp(mean[finite]) == 0:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(offsets[finite], mean[finite]).statistic)


def translation_invariance(G, max_offset: int | None = None) -> float:
    """Translation-invariance score: the share of the variance of φ that the offset explains.

    Every off-diagonal cell φ(x, y), y ≠ x, |y − x| ≤ K, is grouped by its signed offset
    k = y − x; with ``ḡ(k)`` the group means and ``ḡ`` the mean of all cells,

        η² = 1 − Σ_k Σ_x (φ(x, x + k) − ḡ(k))² / Σ_k Σ_x (φ(x, x + k) − ḡ)²,

    the correlation ratio (Fisher's η²) of φ on the offset. It is 1 exactly when every diagonal
    is constant, i.e. when Wang et al.'s translation invariance φ(x₁, x₁ + m) = … = φ(xₙ, xₙ + m)
    holds for every m (the sinusoid, the rotary kernel: 1 up to float rounding), and near 0 when
    the offset tells nothing about φ.

    Parameters
    ----------
    G : array-like
        [n, n] proximity; NaN cells (masked) are left out.
    max_offset : int, optional
        K; n − 1 by default.

    Returns
    -------
    float
        η² in [0, 1] (unitless); 1.0 when all cells are equal (no variance to explain); NaN when
        no finite off-diagonal cell is left.

    Raises
    ------
    ValueError
        When ``G`` is not square or has fewer than 2 rows.
    """
    G = _square(G)
    n = G.shape[0]
    if n < 2:
        raise ValueError("need at least 2 positions")
    K = n - 1 if max_offset is None else int(max_offset)
    k = np.arange(n)[None, :] - np.arange(n)[:, None]
    cells = (k != 0) & (np.abs(k) <= K) & np.isfinite(G)
    values, groups = G[cells], k[cells] + (n - 1)
    if values.size == 0:
        return float("nan")
    counts = np.bincount(groups, minlength=2 * n - 1)
    sums = np.bincount(groups, weights=values, minlength=2 * n - 1)
    means = np.divide(sums, counts, out=np.zeros_like(sums), where=counts > 0)
    total = float(np.sum((values - values.mean()) ** 2))
    if total == 0:
        return 1.0
    within = float(np.sum((values - means[groups]) ** 2))
    return 1.0 - within / total


def symmetry(G) -> float:
    """Symmetry score: one minus the relative difference between φ(x, y) and φ(y, x).

        S = 1 − Σ_{x<y} |φ(x, y) − φ(y, x)| / Σ_{x<y} (|φ(x, y)| + |φ(y, x)|)

    over every pair x < y where both cells are finite. S = 1 exactly when Wang et al.'s symmetry
    φ(x, y) = φ(y, x) holds (every dot product or cosine of position vectors: P·Pᵀ is symmetric by
    construction); S = 0 when in every pair one of the two is 0 (a causal attention matrix, whose
    future keys get weight 0).

    Parameters
    ----------
    G : array-like
        [n, n] proximity.

    Returns
    -------
    float
        S in [0, 1] (unitless); 1.0 when all pairs are 0; NaN when no pair is finite.

    Raises
    ------
    ValueError
        When ``G`` is not square.
    """
    G = _square(G)
    upper = np.triu_indices(G.shape[0], 1)
    a, b = G[upper], G.T[upper]
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.any():
        return float("nan")
    a, b = a[finite], b[finite]
    scale = float(np.sum(np.abs(a) + np.abs(b)))
    return 1.0 if scale == 0 else 1.0 - float(np.sum(np.abs(a - b))) / scale


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
    M = _square(M)
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
    M = _square(M)
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


# ---------------------------------------------------------------- all of it for one matrix


@dataclass
class PositionProperties:
    """Wang et al.'s three properties of one proximity matrix, with what their figures show.

    Attributes
    ----------
    offsets, mean, low, high : np.ndarray
        :func:`proximity_by_offset` over k = 1 … n − 1 ("after" side): [n − 1] each.
    signed_offsets, signed_mean : np.ndarray
        The same over signed offsets −(n − 1) … n − 1 (mean only): [2n − 1].
    monotonicity, translation_invariance, symmetry : float
        :func:`monotonicity`, :func:`translation_invariance`, :func:`symmetry`.
    first_rise : int or None
        :func:`first_rise` of ``mean``.
    diagonal_mean : float
        ḡ(0), the mean of φ(x, x) (the mean squared norm for a dot product): the unit the page
        divides profiles by.
    """

    offsets: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    signed_offsets: np.ndarray
    signed_mean: np.ndarray
    monotonicity: float
    translation_invariance: float
    symmetry: float
    first_rise: int | None
    diagonal_mean: float = field(default=float("nan"))


def position_properties(G) -> PositionProperties:
    """Every score and profile of :class:`PositionProperties` for ``G`` [n, n] (n ≥ 2)."""
    G = _square(G)
    offsets, mean, low, high = proximity_by_offset(G)
    signed_offsets, signed_mean, _, _ = proximity_by_offset(G, signed=True)
    return PositionProperties(
        offsets=offsets, mean=mean, low=low, high=high, signed_offsets=signed_offsets, signed_mean=signed_mean,
        monotonicity=monotonicity(G), translation_invariance=translation_invariance(G), symmetry=symmetry(G),
        first_rise=first_rise(mean, offsets), diagonal_mean=_nan_stats(np.diagonal(G))[0])


# ---------------------------------------------------------------- identical-word attention


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
