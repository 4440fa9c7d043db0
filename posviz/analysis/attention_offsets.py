"""Attention read positionally: weight by relative offset, attention sinks, the previous token; and what the
positional scheme alone predicts for the same offsets.

The offset of query i and key j is ``j − i`` (negative: the key is earlier). The mean weight at offset d
over every query that has a key there is the empirical counterpart of the rotary kernel ``K(d)`` and of
ALiBi's ``−slope · |d|`` (Press et al., ICLR 2022); the weight on the first token is the "attention sink"
(Xiao et al., "Efficient Streaming Language Models with Attention Sinks", ICLR 2024).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from posviz.analysis.properties import proximity_by_offset
from posviz.loading import LoadedModel
from posviz.positions import PositionEncoding

#: Most positions whose vectors or biases give a scheme's prediction by offset (offsets up to one less).
PREDICTION_POSITIONS = 1024


def diagonal_sums(weights: torch.Tensor, start: int, keys: int, scratch: torch.Tensor | None = None) -> torch.Tensor:
    """Sum of ``weights`` along each offset j − i, for the query rows ``start .. start + rows − 1``.

    Parameters
    ----------
    weights : torch.Tensor
        [heads, rows, keys]: row r is query ``start + r``.
    start : int
        The first row's query index.
    keys : int
        Keys (``weights.shape[-1]``); also the number of queries of the whole pattern, so offsets run
        −(keys − 1) … keys − 1.
    scratch : torch.Tensor, optional
        The buffer of an earlier call with weights of the same shape, dtype and device, reused (the cells
        a call does not write are the same in every such call, and stay zero).

    Returns
    -------
    sums : torch.Tensor
        float64 [heads, 2·keys − 1]: entry ``d + keys − 1`` sums ``weights[:, r, j]`` over the cells
        with ``j − (start + r) = d``.
    scratch : torch.Tensor
        The buffer, for the next call.

    Notes
    -----
    The rows are written once into a zeroed buffer [heads, rows, keys + rows − 1] through a strided view
    that shifts row r right by ``rows − 1 − r`` (the "skewing" of Huang et al., Music Transformer, ICLR
    2019, §3.4.1, done as one copy); each buffer column is then one offset, summed over the rows.
    """
    heads, rows, n = weights.shape
    width = n + rows - 1
    skewed = scratch
    if skewed is None or skewed.shape != (heads, rows, width) or skewed.dtype != weights.dtype:
        skewed = torch.zeros((heads, rows, width), dtype=weights.dtype, device=weights.device)
    # skewed[h, r, j + rows - 1 - r] = weights[h, r, j]: rows step by width - 1, so each row starts one earlier
    skewed.as_strided((heads, rows, n), (rows * width, width - 1, 1), rows - 1).copy_(weights)
    sums = skewed.sum(1).double()  # column c: offset c − (rows − 1) − start; float32 within a block
    out = torch.zeros((heads, 2 * keys - 1), dtype=torch.float64, device=weights.device)
    first = keys - rows - start  # index of column 0
    out[:, first:first + width] += sums
    return out, skewed


@dataclass
class OffsetProfile:
    """Attention weight by offset, on the first token and on the previous token, per layer and head.

    Attributes
    ----------
    sums : np.ndarray
        float64 [layers, heads, 2n − 1]: summed weight at each offset d = j − i = −(n − 1) … n − 1.
    first : np.ndarray
        float64 [layers, heads, n]: summed weight each query position puts on key 0 (the sink).
    previous : np.ndarray
        float64 [layers, heads, n]: summed weight each query position i puts on key i − 1 (0 at i = 0).
    inputs : int
        Inputs (windows) summed: each adds one to every cell's count.
    """

    sums: np.ndarray
    first: np.ndarray
    previous: np.ndarray
    inputs: int = 1

    @classmethod
    def empty(cls, layers: int, heads: int, n: int) -> "OffsetProfile":
        """A profile of zeros for one input of ``n`` tokens, filled by :meth:`add`."""
        return cls(np.zeros((layers, heads, 2 * n - 1)), np.zeros((layers, heads, n)), np.zeros((layers, heads, n)))

    @property
    def tokens(self) -> int:
        """n, the tokens of each input."""
        return self.first.shape[-1]

    @property
    def offsets(self) -> np.ndarray:
        """int64 [2n − 1]: −(n − 1) … n − 1."""
        n = self.tokens
        return np.arange(-(n - 1), n, dtype=np.int64)

    def add(self, layer: int, start: int, weights: torch.Tensor, scratch: dict | None = None) -> None:
        """Add the weights of query rows ``start ..`` of ``layer``: [heads, rows, n] (self-attention).
        ``scratch``: a dict the caller keeps for the reading, holding :func:`diagonal_sums`' buffer for the
        first block height it sees (the profile itself keeps none)."""
        n = weights.shape[-1]
        rows = weights.shape[1]
        scratch = {} if scratch is None else scratch
        sums, buffer = diagonal_sums(weights, start, n, scratch.get(rows))
        scratch.setdefault(rows, buffer)  # the first block's height only: a last, shorter block's buffer goes
        self.sums[layer] += sums.cpu().numpy()
        self.first[layer, :, start:start + rows] += weights[:, :, 0].double().cpu().numpy()
        lo = max(start, 1)
        if lo < start + rows:
            index = torch.arange(lo, start + rows, device=weights.device)
            picked = weights[:, index - start, index - 1]
            self.previous[layer, :, lo:start + rows] += picked.double().cpu().numpy()

    def __add__(self, other: "OffsetProfile") -> "OffsetProfile":
        """The profile of both inputs' windows (same layers, heads and length)."""
        if self.sums.shape != other.sums.shape:
            raise ValueError(f"Profiles of different shapes: {self.sums.shape} and {other.sums.shape}")
        return OffsetProfile(self.sums + other.sums, self.first + other.first, self.previous + other.previous,
                             self.inputs + other.inputs)

    @property
    def mean(self) -> np.ndarray:
        """float64 [layers, heads, 2n − 1]: mean weight at each offset over the queries that have a key
        there (n − |d| per input)."""
        counts = (self.tokens - np.abs(self.offsets)) * self.inputs
        return self.sums / counts

    @property
    def sink(self) -> np.ndarray:
        """float64 [layers, heads]: mean share of each query's attention on the first token."""
        return self.first.sum(-1) / (self.tokens * self.inputs)

    @property
    def previous_share(self) -> np.ndarray:
        """float64 [layers, heads]: mean share of each query's attention (from the second on) on the
        token before it."""
        return self.previous[..., 1:].sum(-1) / max((self.tokens - 1) * self.inputs, 1)

    def by_query(self, which: str) -> np.ndarray:
        """float64 [layers, heads, n]: the ``"sink"`` or ``"previous"`` share at each query position
        (a causal query i sees i + 1 tokens: how the share changes with the input's length)."""
        return (self.first if which == "sink" else self.previous) / self.inputs


def stack_encoding(lm: LoadedModel, stack: str, layer: int) -> PositionEncoding:
    """The positional component that acts on ``layer`` of ``stack``: the stack's own (T5's encoder and
    decoder biases are components named after their stack), else the layer's
    (:meth:`posviz.LoadedModel.layer_encoding`: the first component of a model that does not mix them)."""
    if stack in [encoding.component for encoding in lm.encodings]:
        return lm.encoding(stack)
    return lm.layer_encoding(layer)


def scheme_by_offset(encoding: PositionEncoding, tokens: int) -> tuple[np.ndarray, np.ndarray] | None:
    """What the positional scheme alone predicts for each offset j − i: the score of positions, no content.

    Vectors (learned table, sinusoid, rotary features): the mean of P_i · P_j over the pairs at offset
    d (for rotary, whose features give the kernel, ``K(d) = Σ_k cos(d·θ_k)``). A bias per head (ALiBi,
    T5's buckets): the mean bias at offset d, per head (ALiBi: ``−slope_h · |d|`` before the query, NaN
    after). Positions 0 … min(tokens, the encoding's positions, :data:`PREDICTION_POSITIONS`) − 1.

    Parameters
    ----------
    encoding : PositionEncoding
    tokens : int
        The input's length.

    Returns
    -------
    (offsets, values) or None
        offsets int64 [2m − 1]; values float64 [heads or 1, 2m − 1] in the units of the scores (dot
        product or bias). None for a scheme with neither vectors nor a bias (none).
    """
    m = min(tokens, encoding.num_positions, PREDICTION_POSITIONS)
    if m < 2 or not (encoding.has_vectors or encoding.has_bias):
        return None
    positions = np.arange(m)
    if encoding.has_vectors:
        vectors = encoding.vectors(positions).double()
        grids = [(vectors @ vectors.T).cpu().numpy()]
    else:
        grids = list(encoding.bias(positions))
    rows = [proximity_by_offset(g, signed=True) for g in grids]
    return rows[0][0], np.stack([r[1] for r in rows])
