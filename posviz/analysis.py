"""Similarity between positions, row profiles and low-dimensional projections."""

from __future__ import annotations

import warnings

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


def project(vectors, method: str = "umap", n_components: int = 2, seed: int = 0) -> np.ndarray:
    """Project rows to 2 or 3 dimensions with UMAP (umap-learn) or PCA (scikit-learn).

    Parameters
    ----------
    vectors : array-like
        [n, width].
    method : {"umap", "pca"}
        UMAP: McInnes et al. (2018), ``umap.UMAP(n_components, random_state=seed)`` with the
        library's defaults (15 neighbours, Euclidean); PCA: ``sklearn.decomposition.PCA``.
    n_components : int
    seed : int
        Random state; UMAP with a seed is deterministic (and single-threaded).

    Returns
    -------
    np.ndarray
        float32 [n, n_components].

    Raises
    ------
    ValueError
        For an unknown method.
    """
    x = np.asarray(torch.as_tensor(vectors).to(torch.float32).cpu())
    if method == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=n_components, random_state=seed).fit_transform(x).astype(np.float32)
    if method == "umap":
        import umap

        return umap.UMAP(n_components=n_components, random_state=seed).fit_transform(x).astype(np.float32)
    raise ValueError(f"method must be 'umap' or 'pca', not {method!r}")


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
    pad = [(0, 0)] * (matrix.ndim - 2) + [(0, -n % f), (0, -m % f)]
    padded = np.pad(matrix.astype(np.float32), pad, constant_values=np.nan)
    shape = padded.shape[:-2] + (padded.shape[-2] // f, f, padded.shape[-1] // f, f)
    with warnings.catch_warnings():  # a block that is all NaN (masked) stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(padded.reshape(shape), axis=(-3, -1)), f


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
