"""Wang et al.'s three properties of a proximity between positions: monotonicity, translation
invariance, symmetry.

Wang et al., "On Position Embeddings in BERT" (ICLR 2021), state three properties of a proximity φ
between positions (here a dot product or cosine of position vectors, or an attention weight):

* monotonicity: m > n ⇔ φ(x, x + m) < φ(x, x + n) (nearer positions are closer);
* translation invariance: φ(x₁, x₁ + m) = … = φ(xₙ, xₙ + m) for every offset m;
* symmetry: φ(x, y) = φ(y, x).

The paper's own numeric indicators were not available to us: each score below is named for what
it is (a Spearman correlation, a share of variance, a ratio of absolute differences) and is ours,
not the paper's.

Matrices are ``G[x, y]`` = φ(x, y), rows and columns positions 0 … n − 1 (for attention: row =
query, column = key). NaN cells are masked (a causal model's future keys) and left out of every
score. Pure numpy and SciPy: no model runs here.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np


def as_square(G) -> np.ndarray:
    """``G`` as a float64 numpy matrix, checked square [n, n].

    Raises
    ------
    ValueError
        When ``G`` is not a square 2-D matrix.
    """
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
    G = as_square(G)
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
    over 512 positions gives −0.9844 (computed from the formula; ``docs/references.md``).

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
    from scipy import stats  # here: importing posviz stays light

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
    G = as_square(G)
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
    G = as_square(G)
    upper = np.triu_indices(G.shape[0], 1)
    a, b = G[upper], G.T[upper]
    finite = np.isfinite(a) & np.isfinite(b)
    if not finite.any():
        return float("nan")
    a, b = a[finite], b[finite]
    scale = float(np.sum(np.abs(a) + np.abs(b)))
    return 1.0 if scale == 0 else 1.0 - float(np.sum(np.abs(a - b))) / scale


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
    G = as_square(G)
    offsets, mean, low, high = proximity_by_offset(G)
    signed_offsets, signed_mean, _, _ = proximity_by_offset(G, signed=True)
    return PositionProperties(
        offsets=offsets, mean=mean, low=low, high=high, signed_offsets=signed_offsets, signed_mean=signed_mean,
        monotonicity=monotonicity(G), translation_invariance=translation_invariance(G), symmetry=symmetry(G),
        first_rise=first_rise(mean, offsets), diagonal_mean=_nan_stats(np.diagonal(G))[0])
