"""Probes of Wang & Chen (EMNLP 2020): how well a linear model reads position from vectors.

Y.-A. Wang and Y.-N. Chen, "What Do Position Embeddings Learn? An Empirical Study of Pre-Trained
Language Model Positional Encoding", EMNLP 2020, section 3:

- absolute position: fit a linear regression from a position vector to its position (row index),
  5-fold cross-validation over the shuffled rows, report the mean absolute error (MAE) of the
  rounded prediction, in positions;
- relative order: draw position pairs (i, j), i ≠ j, fit a logistic regression from the
  concatenation [PE_i ; PE_j] to "j comes after i", 5-fold cross-validation, report the error rate.

Their code drew 512 pairs without a seed; here the seed and the number of pairs are arguments,
and every fit is scikit-learn's (``LinearRegression``, ``LogisticRegression``,
``cross_val_predict`` with ``KFold`` / ``StratifiedKFold``). On the interleaved sinusoid of
512 × 768 the absolute probe gives MAE 0.0 and the relative probe an error rate of about 0.05.

The probes take any matrix (a position table, a sinusoid, hidden states): no model runs here;
:mod:`posviz.analysis.layer_probe` applies the absolute probe to each layer of a model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from threadpoolctl import threadpool_limits

#: Regressions of the absolute probe: the paper's least squares, or ridge (an addition of posviz).
REGRESSIONS = ("linear", "ridge")
#: The penalties RidgeCV chooses from (by efficient leave-one-out on each training split).
RIDGE_ALPHAS = np.logspace(-3, 3, 7)


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe.

    Attributes
    ----------
    probe : {"absolute", "relative"}
    score : float
        Absolute probe: mean absolute error of the rounded prediction, in positions (0 = every
        position read back exactly). Relative probe: error rate, the fraction of held-out pairs
        whose order is predicted wrongly (0 to 1; 0.5 is chance).
    targets : np.ndarray
        Absolute: int64 [n], ``arange(n)`` (the position of each row). Relative: int64 [pairs],
        1 where j > i, else 0.
    predictions : np.ndarray
        Absolute: float64 [n], the cross-validated (held-out) prediction for position p at index
        p, before rounding. Relative: int64 [pairs], the held-out predicted label of each pair.
    pairs : np.ndarray or None
        Relative: int64 [pairs, 2], the (i, j) of each pair; None for the absolute probe.
    folds : int
    seed : int
    """

    probe: str
    score: float
    targets: np.ndarray
    predictions: np.ndarray
    pairs: np.ndarray | None
    folds: int
    seed: int


def _matrix(vectors) -> np.ndarray:
    """Tensor or array-like [n, width] -> float64 numpy, checked."""
    x = np.asarray(torch.as_tensor(vectors).detach().to(torch.float64).cpu())
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D [positions, width] matrix, not of shape {x.shape}")
    return x


def _check_folds(folds: int, samples: int, what: str) -> None:
    if folds < 2:
        raise ValueError(f"folds must be at least 2, not {folds}")
    if samples < folds:
        raise ValueError(f"{folds}-fold cross-validation needs at least {folds} {what}, not {samples}")


def _single_threaded_blas():
    """These fits are small (at most a few thousand rows): one BLAS thread is faster than several,
    and multi-threaded OpenBLAS spins badly on a busy machine (10× slower on 2 loaded cores).
    Only numpy's and SciPy's BLAS are limited (torch's own pools are left alone), until the block ends."""
    return threadpool_limits(limits=1, user_api="blas")


def absolute_position_probe(vectors, folds: int = 5, seed: int = 0, regression: str = "linear") -> ProbeResult:
    """Absolute-position probe: how well a linear map reads each row's index (Wang & Chen, 2020).

    The rows are shuffled (``np.random.default_rng(seed)``), split by
    ``KFold(folds, shuffle=True, random_state=seed)``, and ``sklearn.linear_model.LinearRegression``
    (least squares with an intercept; the minimum-norm solution where there are more columns than
    training rows) is fitted from row to index on each training split; every row is predicted by the
    fit that did not see it (``cross_val_predict``).

    Parameters
    ----------
    vectors : array-like or torch.Tensor
        [n, width]; row p is the vector of position p (a position table, a sinusoid, hidden states).
    folds : int
        Folds of the cross-validation (the paper: 5).
    seed : int
        Seeds the shuffle and the folds.
    regression : {"linear", "ridge"}
        ``"linear"``: the paper's ``LinearRegression``. ``"ridge"`` (not in the paper):
        ``RidgeCV(alphas=RIDGE_ALPHAS)``, the L2 penalty chosen by leave-one-out on each training
        split. Least squares overfits where the width nears the training rows (hidden states of
        width 384 from 410 tokens: held-out MAEs worse than guessing the middle); ridge does not.

    Returns
    -------
    ProbeResult
        ``score``: MAE of the rounded held-out prediction, in positions; ``predictions``: float64 [n]
        in position order.

    Raises
    ------
    ValueError
        For vectors that are not 2-D, ``folds < 2``, fewer rows than folds, or an unknown regression.
    """
    if regression not in REGRESSIONS:
        raise ValueError(f"regression must be one of {REGRESSIONS}, not {regression!r}")
    x = _matrix(vectors)
    n = x.shape[0]
    _check_folds(folds, n, "positions")
    from sklearn.linear_model import LinearRegression, RidgeCV  # here: importing posviz stays light
    from sklearn.model_selection import KFold, cross_val_predict

    estimator = LinearRegression() if regression == "linear" else RidgeCV(alphas=RIDGE_ALPHAS)
    positions = np.arange(n, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(n)
    with _single_threaded_blas():
        held_out = cross_val_predict(estimator, x[order], positions[order],
                                     cv=KFold(folds, shuffle=True, random_state=seed))
    predictions = np.empty(n, dtype=np.float64)
    predictions[order] = held_out
    mae = float(np.abs(np.rint(predictions) - positions).mean())
    return ProbeResult("absolute", mae, positions, predictions, None, folds, seed)


def relative_order_probe(vectors, pairs: int = 512, folds: int = 5, seed: int = 0) -> ProbeResult:
    """Relative-order probe: does a linear classifier tell which of two positions comes first
    (Wang & Chen, 2020)?

    ``pairs`` pairs (i, j) are drawn independently and uniformly among ordered pairs with i ≠ j
    (``np.random.default_rng(seed)``); the features of a pair are ``[PE_i ; PE_j]`` (width × 2), the
    label is ``j > i``. ``sklearn.linear_model.LogisticRegression`` (L2, C = 1, lbfgs, up to 1000
    iterations) is cross-validated with ``StratifiedKFold(folds, shuffle=True, random_state=seed)``
    (every fold holds both labels) through ``cross_val_predict``.

    Parameters
    ----------
    vectors : array-like or torch.Tensor
        [n, width]; row p is the vector of position p.
    pairs : int
        Number of pairs (the paper's code: 512, without a seed).
    folds : int
    seed : int
        Seeds the pairs and the folds.

    Returns
    -------
    ProbeResult
        ``score``: error rate of the held-out predictions (0 to 1); ``pairs``: int64 [pairs, 2].

    Raises
    ------
    ValueError
        For vectors that are not 2-D or have fewer than 2 rows, ``folds < 2``, or too few pairs for
        every fold to hold each label (fewer than ``folds`` pairs of either order).
    """
    x = _matrix(vectors)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"the relative probe needs at least 2 positions, not {n}")
    _check_folds(folds, pairs, "pairs")
    rng = np.random.default_rng(seed)
    i = rng.integers(n, size=pairs)
    j = (i + rng.integers(1, n, size=pairs)) % n  # uniform over j != i
    labels = (j > i).astype(np.int64)
    fewest = int(min(labels.sum(), pairs - labels.sum()))
    if fewest < folds:
        raise ValueError(f"{pairs} pairs hold only {fewest} of one order: too few for {folds} folds; draw more pairs")
    features = np.concatenate([x[i], x[j]], axis=1)
    from sklearn.linear_model import LogisticRegression  # here: importing posviz stays light
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    with _single_threaded_blas():
        predicted = cross_val_predict(LogisticRegression(max_iter=1000), features, labels,
                                      cv=StratifiedKFold(folds, shuffle=True, random_state=seed))
    error = float((predicted != labels).mean())
    return ProbeResult("relative", error, labels, predicted.astype(np.int64), np.stack([i, j], axis=1), folds, seed)


def middle_guess_mae(n: int) -> float:
    """MAE of always guessing the middle position ``round((n - 1) / 2)`` over positions 0 .. n-1
    (about n / 4): what a probe that learned nothing scores."""
    return float(np.abs(np.rint((n - 1) / 2) - np.arange(n)).mean())
