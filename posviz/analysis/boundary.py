"""The 128 boundary of a position table: what BERT's two pre-training phases left in its rows.

BERT (Devlin et al., NAACL 2019; ``docs/references.md``) was pre-trained on sequences of 128 tokens for 90 % of
its steps and on 512 for the rest, so rows 0 … 127 of its position table were trained some ten times
as long as rows 128 … 511 (MiniLM, distilled from it, kept the table's shape). Three numbers show
what that left, each computed here from the rows alone (the values of the bundled model are ours,
computed with posviz):

* the length of row 127, the last one of the short phase, against the median length of all rows
  (the bundled all-MiniLM-L6-v2: 0.689 against 0.478, a ratio of 1.44);
* the mean cosine between consecutive rows before the boundary and after it (0.863 and 0.848).

A fixed sinusoid has rows of one length (ratio 1) and, translation invariant, the same cosine
between every pair of consecutive rows, on both sides. Pure numpy: no model runs here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: BERT's pre-training boundary: positions 0 … 127 were trained in both phases, 128 … 511 in the second only.
BOUNDARY = 128


@dataclass(frozen=True)
class BoundaryStatistics:
    """What a position table shows at a pre-training boundary b (:func:`boundary_statistics`).

    Attributes
    ----------
    boundary : int
        b: rows 0 … b − 1 before it, b … n − 1 after.
    edge_norm_ratio : float
        ‖P[b − 1]‖ ÷ the median of ‖P[p]‖ over every row p (unitless; 1 for rows of one length).
    next_cosine_before, next_cosine_after : float
        The mean of cos(P[p], P[p + 1]) over p = 0 … b − 2 (both rows before b), and over
        p = b … n − 2 (both rows from b on); unitless, in [−1, 1].
    """

    boundary: int
    edge_norm_ratio: float
    next_cosine_before: float
    next_cosine_after: float


def boundary_statistics(vectors, boundary: int = BOUNDARY) -> BoundaryStatistics:
    """The length of the last row before ``boundary`` and the cosine of consecutive rows on each side.

    Parameters
    ----------
    vectors : array-like
        [n, width], row p the vector of position p (a position table, a sinusoid); n ≥ boundary + 2.
    boundary : int
        b ≥ 2, the first row of the second phase (BERT: 128).

    Returns
    -------
    BoundaryStatistics

    Raises
    ------
    ValueError
        For vectors that are not 2-D, a boundary below 2, or fewer than ``boundary + 2`` rows (no pair
        of consecutive rows after the boundary).

    Examples
    --------
    >>> from posviz.positions import sinusoidal
    >>> found = boundary_statistics(sinusoidal(256, 64))
    >>> round(found.edge_norm_ratio, 6), round(found.next_cosine_before - found.next_cosine_after, 6)
    (1.0, 0.0)
    """
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D [positions, width] matrix, not of shape {x.shape}")
    if boundary < 2:
        raise ValueError(f"the boundary must be at least 2, not {boundary}")
    if x.shape[0] < boundary + 2:
        raise ValueError(f"{x.shape[0]} rows: the statistics at boundary {boundary} need at least {boundary + 2}")
    norms = np.linalg.norm(x, axis=1)
    unit = x / np.where(norms > 0, norms, 1.0)[:, None]
    following = np.einsum("pd,pd->p", unit[:-1], unit[1:])  # [n − 1]: cos(P[p], P[p + 1])
    return BoundaryStatistics(boundary=boundary, edge_norm_ratio=float(norms[boundary - 1] / np.median(norms)),
                              next_cosine_before=float(following[:boundary - 1].mean()),
                              next_cosine_after=float(following[boundary:].mean()))
