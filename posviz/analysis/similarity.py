"""Similarity between positions, row profiles, and the bounds that keep long contexts on screen."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


def similarity(vectors, metric: str = "dot") -> np.ndarray:
    """Similarity between every pair of rows.

    Parameters
    ----------
    vectors : torch.Tensor or array-like
        [n, width]. A tensor is computed on its own device (the GPU where the model is there).
    metric : {"dot", "cosine"}
        ``"dot"``: G = V Vᵀ; ``"cosine"``: the same on rows scaled to unit length.

    Returns
    -------
    np.ndarray
        float32 [n, n].

    Raises
    ------
    ValueError
        For an unknown metric.
    """
    x = torch.as_tensor(vectors).to(torch.float32)
    if metric == "cosine":
        x = torch.nn.functional.normalize(x, dim=-1)
    elif metric != "dot":
        raise ValueError(f"metric must be 'dot' or 'cosine', not {metric!r}")
    return (x @ x.T).cpu().numpy()


def row_profile(similarity: np.ndarray, q: int, normalize: str | None = "max") -> np.ndarray:
    """Row ``q`` of a similarity matrix: "position q against all".

    ``r(j) = G[q, j] / max_j G[q, j]`` when ``normalize="max"`` (the usual figure of position
    embedding blog posts), else ``G[q, j]``.

    Parameters
    ----------
    similarity : np.ndarray
        [n, n].
    q : int
        0-based row.
    normalize : {"max", None}

    Returns
    -------
    np.ndarray
        float [n].

    Raises
    ------
    IndexError
        When ``q`` is outside ``0 .. n-1``.
    ValueError
        For an unknown ``normalize``.
    """
    if not 0 <= q < similarity.shape[0]:
        raise IndexError(f"position {q} is outside 0..{similarity.shape[0] - 1}")
    row = np.asarray(similarity[q])
    if normalize == "max":
        return row / row.max()
    if normalize is None:
        return row
    raise ValueError(f"normalize must be 'max' or None, not {normalize!r}")


def block_mean(matrix: np.ndarray, max_size: int) -> tuple[np.ndarray, int]:
    """Shrink the last two axes to at most ``max_size`` by averaging ``f × f`` blocks.

    Used where a figure would otherwise send the browser more cells than it has pixels (small
    multiples of long inputs, wide position ranges); the figure states ``f``.

    Parameters
    ----------
    matrix : np.ndarray
        [..., n, m].
    max_size : int
        Largest size of each of the last two axes after reduction.

    Returns
    -------
    reduced : np.ndarray
        float32 [..., ceil(n / f), ceil(m / f)]; a block cut by the edge averages the cells it has.
    f : int
        The block size, ``ceil(max(n, m) / max_size)``; 1 means ``matrix`` is returned unchanged.
    """
    n, m = matrix.shape[-2:]
    f = -(-max(n, m) // max_size)
    if f <= 1:
        return matrix, 1
    x = np.asarray(matrix, dtype=np.float32)

    def block_sums(a: np.ndarray) -> np.ndarray:  # sums over each block, cut blocks at the edges included
        return _add_strided(_add_strided(a, f, -2), f, -1)

    valid = ~np.isnan(x)
    if valid.all():
        sums = block_sums(x)
        counts = np.outer(np.diff(np.arange(0, n, f), append=n), np.diff(np.arange(0, m, f), append=m))
    else:  # NaN cells (masked) are left out; a block of NaN alone stays NaN
        sums, counts = block_sums(np.where(valid, x, 0)), block_sums(valid.astype(np.float32))
    with np.errstate(invalid="ignore"):
        return (sums / counts).astype(np.float32), f


def _add_strided(a: np.ndarray, f: int, axis: int) -> np.ndarray:
    """Sums of each run of ``f`` cells of ``a`` along ``axis`` (the last run cut by the edge): its
    strided slices ``k::f`` added in order, so that each run is summed left to right (2-10 × faster
    than ``np.add.reduceat``)."""
    cells = np.moveaxis(a, axis, 0)
    sums = cells[0::f].copy(order="K")
    for k in range(1, f):
        part = cells[k::f]
        sums[:len(part)] += part
    return np.moveaxis(sums, 0, axis)


def sample_positions(first: int, last: int, max_points: int) -> tuple[np.ndarray, int]:
    """Positions ``first .. last`` (inclusive), every ``step``-th so that at most ``max_points`` remain.

    Long contexts (32k to 128k positions) are shown by a stride, never by an n × n matrix over
    every position; the figure states the stride.

    Returns
    -------
    positions : np.ndarray
        int64 [≤ max_points].
    step : int
        The stride (1 when the range fits).
    """
    step = max(1, -(-(last - first + 1) // max_points))
    return np.arange(first, last + 1, step, dtype=np.int64), step


@dataclass(frozen=True)
class PositionMatrix:
    """A scheme's position-position matrix over a range of rows, every ``step``-th.

    Attributes
    ----------
    values : np.ndarray
        float32 [n, n] for a vector scheme (the similarity of its vectors), [heads, n, n] for a
        bias scheme (each head's bias; NaN where a causal mask hides the key).
    positions : np.ndarray
        int64 [n]: the encoding's row of each row and column (0-based).
    step : int
        The stride between rows (1: every row of the range).
    last : int
        The last row of the range asked for (the last shown is at most this).
    label : str
        What the values are called on figures ("P·Pᵀ", "K(m, n)", "cosine", "bias").
    axis_label : str
        What a row is ("position", "relative position bucket").
    first_label : int
        The label of row 0 (negative for relative positions): row r is labelled ``r + first_label``.
    """

    values: np.ndarray
    positions: np.ndarray
    step: int
    last: int
    label: str
    axis_label: str = "position"
    first_label: int = 0

    @property
    def labels(self) -> np.ndarray:
        """int64 [n]: each row's label on figures."""
        return self.positions + self.first_label

    @property
    def rows(self) -> int:
        """Rows of the range asked for, shown or skipped by the stride."""
        return self.last - int(self.positions[0]) + 1

    @property
    def per_head(self) -> bool:
        """A bias per head ([heads, n, n]) rather than one matrix."""
        return self.values.ndim == 3


def position_matrix(encoding, first: int, last: int, metric: str = "dot", max_points: int = 2048) -> PositionMatrix:
    """The position-position matrix of a positional encoding over rows ``first .. last``.

    Vector schemes (``encoding.has_vectors``): :func:`similarity` of the vectors, computed on the
    model's device; bias schemes: the bias every head adds (``encoding.bias``; ``metric`` unused).

    Parameters
    ----------
    encoding : posviz.positions.PositionEncoding
    first, last : int
        Rows (inclusive, 0-based), within ``0 .. encoding.num_positions - 1``.
    metric : {"dot", "cosine"}
    max_points : int
        Most rows per side: a wider range is taken every k-th row (:func:`sample_positions`).

    Returns
    -------
    PositionMatrix

    Raises
    ------
    TypeError
        For an encoding with neither vectors nor a bias (no positional encoding).
    """
    positions, step = sample_positions(first, last, max_points)
    if encoding.has_bias:
        values = encoding.bias(positions)
    else:
        values = similarity(encoding.vectors(positions), metric)
    return PositionMatrix(values, positions, step, last, encoding.metric_label(metric), encoding.axis_label,
                          encoding.first_label)
