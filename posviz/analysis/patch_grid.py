"""The patches of a vision tower's position table as a 2-D grid: each patch's similarity map, in its place.

The ViT paper's Figure 7 (Dosovitskiy et al., 2021) shows, for every patch of the grid, the cosine
similarity of its position embedding with every patch's, as a small map at that patch's place.
Here: the maps as an array, the mosaic that lays them out in one matrix (thin blank separators
between maps), and the maps of the tokens before the patches (CLS, distillation), kept apart.
"""

from __future__ import annotations

import math

import numpy as np

from posviz.analysis.similarity import similarity
from posviz.positions import PositionEncoding

#: Most maps per side of the mosaic: a larger grid (DINOv2 at 518 pixels: 37 × 37) shows every k-th
#: patch's map (each map whole), so that the mosaic stays near 512 cells a side.
MAX_MAPS = 16


def patch_maps(encoding: PositionEncoding) -> np.ndarray:
    """Every patch's cosine similarity map: ``maps[r, c, i, j]`` = cos(P[patch (r, c)], P[patch (i, j)]).

    Parameters
    ----------
    encoding : PositionEncoding
        An encoding with a :attr:`~PositionEncoding.grid` (:class:`posviz.positions.patches.PatchEmbeddings`).

    Returns
    -------
    np.ndarray
        float32 [rows, cols, rows, cols]; patch (r, c) is table row ``grid.first_patch + r * cols + c``.

    Raises
    ------
    ValueError
        For an encoding whose rows form no grid.
    """
    grid = encoding.grid
    if grid is None:
        raise ValueError("this encoding's rows are a sequence, not a grid of patches")
    rows = np.arange(grid.first_patch, grid.first_patch + grid.num_patches)
    cos = similarity(encoding.vectors(rows), "cosine")
    return cos.reshape(grid.rows, grid.cols, grid.rows, grid.cols)


def special_maps(encoding: PositionEncoding) -> np.ndarray:
    """The cosine similarity of each token before the patches (CLS, distillation) with every patch.

    Returns
    -------
    np.ndarray
        float32 [k, rows, cols] for the k tokens of ``grid.special``, in table order ([0, rows, cols]
        where there are none, as in SigLIP).
    """
    grid = encoding.grid
    if grid is None:
        raise ValueError("this encoding's rows are a sequence, not a grid of patches")
    cos = similarity(encoding.vectors(np.arange(grid.first_patch + grid.num_patches)), "cosine")
    return cos[:grid.first_patch, grid.first_patch:].reshape(grid.first_patch, grid.rows, grid.cols)


def map_stride(rows: int, cols: int, most: int = MAX_MAPS) -> int:
    """Every k-th patch's map a mosaic shows per side: 1 up to ``most`` patches a side.

    Examples
    --------
    >>> map_stride(14, 14), map_stride(37, 37)
    (1, 3)
    """
    return max(1, math.ceil(max(rows, cols) / most))


def mosaic(maps: np.ndarray, stride: int = 1) -> np.ndarray:
    """The maps laid out in one matrix, each at its patch's place, one blank (NaN) line between maps.

    Parameters
    ----------
    maps : np.ndarray
        [rows, cols, rows, cols] (:func:`patch_maps`).
    stride : int
        Every ``stride``-th patch's map per side (grid rows and columns 0, stride, 2·stride …); each map whole.

    Returns
    -------
    np.ndarray
        float32 [R·(rows + 1) − 1, C·(cols + 1) − 1] for the R × C maps shown: cell
        ``(a·(rows + 1) + i, b·(cols + 1) + j)`` is ``maps[a·stride, b·stride, i, j]``.

    Examples
    --------
    >>> maps = np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)
    >>> mosaic(maps)[:2]
    array([[ 0.,  1., nan,  4.,  5.],
           [ 2.,  3., nan,  6.,  7.]], dtype=float32)
    """
    shown = maps[::stride, ::stride]
    big_r, big_c, rows, cols = shown.shape
    out = np.full((big_r, rows + 1, big_c, cols + 1), np.nan, dtype=np.float32)
    out[:, :rows, :, :cols] = shown.transpose(0, 2, 1, 3)
    return out.reshape(big_r * (rows + 1), big_c * (cols + 1))[:-1, :-1]
