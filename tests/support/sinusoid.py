"""The sinusoid of Vaswani et al. (2017), computed here from its formula (float64, numpy only).

    PE(p, 2i) = sin(p / 10000^(2i/d)),   PE(p, 2i+1) = cos(p / 10000^(2i/d)),   i = 0 .. d/2 - 1

so that, with w_k = 10000^(-2k/d),

    PE_i . PE_j = sum_k [sin(i w_k) sin(j w_k) + cos(i w_k) cos(j w_k)] = sum_k cos((i - j) w_k):

the Gram matrix depends on i - j only (every diagonal is constant) and its diagonal is d/2.

The reference values of this sinusoid (docs/references.md, "Reference values")
are asserted once, in ``tests/test_schemes.py::test_sinusoid_reference_values``, against these
functions; the other tests compare posviz with these functions, not with the numbers again.
"""

from __future__ import annotations

import numpy as np


def frequencies(d: int) -> np.ndarray:
    """w_k = 10000^(-2k/d), k = 0 .. d/2 - 1."""
    return 1.0 / np.power(10000.0, 2 * np.arange(d // 2, dtype=np.float64) / d)


def vaswani(n: int, d: int) -> np.ndarray:
    """[n, d] float64: PE(p, 2i) = sin(p w_i), PE(p, 2i + 1) = cos(p w_i) (interleaved)."""
    angle = np.arange(n, dtype=np.float64)[:, None] * frequencies(d)[None, :]
    pe = np.empty((n, d))
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle)
    return pe


def gram(n: int, d: int) -> np.ndarray:
    """[n, n] float64: PE_i . PE_j, from the vectors."""
    pe = vaswani(n, d)
    return pe @ pe.T


def offset_curve(n: int, d: int) -> np.ndarray:
    """[n] float64: g(k) = sum_k cos(k w_k) for k = 0 .. n - 1, the dot product at offset k, from the
    closed form (not from the vectors)."""
    return np.cos(np.arange(n, dtype=np.float64)[:, None] * frequencies(d)[None, :]).sum(axis=1)


def first_rise(curve: np.ndarray) -> int:
    """The first offset k >= 1 with g(k + 1) > g(k), for ``curve`` = g(0 .. n - 1)."""
    return int(np.flatnonzero(np.diff(curve[1:]) > 0)[0]) + 1
