"""Low-dimensional projections of position vectors: UMAP (umap-learn) and PCA (scikit-learn)."""

from __future__ import annotations

import functools
import sys
import warnings

import numpy as np
import torch

#: Projection methods, as :func:`project` names them.
METHODS = ("umap", "pca")


class ProjectionFallback(UserWarning):
    """UMAP was asked for on fewer points than it can embed; PCA was used (the message says why)."""


@functools.cache
def umap_module():
    """umap-learn, imported, with numba's disk cache on for every compiled function of umap-learn and
    pynndescent.

    umap-learn marks only some of its numba functions ``cache=True``; the others (about half of
    its 514 with pynndescent) were compiled anew in every process, some 10 s on a 2-core machine
    before the first projection. Each function's dispatcher is switched to numba's file cache
    (``Dispatcher.enable_caching``, what ``cache=True`` does) before its first call, so a
    restarted server, or a container whose image compiled them, reads them from disk. The cache
    is numba's: the folder ``NUMBA_CACHE_DIR`` names, or beside umap-learn's sources, or the
    user's cache folder where those cannot be written.

    Returns
    -------
    module
        ``umap``.
    """
    import umap
    from numba.core.registry import CPUDispatcher

    for name, module in list(sys.modules.items()):
        if module is None or name.partition(".")[0] not in ("umap", "pynndescent"):
            continue
        for value in list(vars(module).values()):
            if isinstance(value, CPUDispatcher):
                value.enable_caching()
    return umap


def projection_method(method: str, points: int, n_components: int) -> tuple[str, str]:
    """The method :func:`project` uses for ``points`` rows, and why where it is not the one asked for.

    UMAP's spectral initialisation needs at least ``n_components + 2`` points (with fewer, umap-learn
    fails deep inside NumPy or SciPy: "zero-size array", "k >= N"); PCA is used then.

    Parameters
    ----------
    method : {"umap", "pca"}
    points, n_components : int

    Returns
    -------
    method : str
        ``"umap"`` or ``"pca"``.
    reason : str
        Empty where the method is the one asked for.

    Raises
    ------
    ValueError
        For an unknown method, or fewer points than ``n_components`` (no PCA either: a 2-D
        projection needs two points at least).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    if points < n_components:
        raise ValueError(f"A {n_components}-D projection needs at least {n_components} positions; "
                         f"{points} {'is' if points == 1 else 'are'} too few. Widen the range.")
    if method == "umap" and points < n_components + 2:
        return "pca", (f"UMAP cannot embed {points} positions in {n_components} dimensions (it needs at least "
                       f"{n_components + 2}), so PCA is shown.")
    return method, ""


def project(vectors, method: str = "umap", n_components: int = 2, seed: int = 0) -> np.ndarray:
    """Project rows to 2 or 3 dimensions with UMAP (umap-learn) or PCA (scikit-learn).

    Parameters
    ----------
    vectors : array-like
        [n, width].
    method : {"umap", "pca"}
        UMAP: McInnes et al. (2018), ``umap.UMAP(n_components, random_state=seed)`` with the
        library's defaults (15 neighbours, Euclidean); PCA: ``sklearn.decomposition.PCA``. On
        fewer rows than UMAP can embed, PCA is used with a :class:`ProjectionFallback` warning
        (:func:`projection_method`).
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
        For an unknown method, or fewer rows than ``n_components``.
    """
    x = np.asarray(torch.as_tensor(vectors).to(torch.float32).cpu())
    used, reason = projection_method(method, x.shape[0], n_components)
    if reason:
        warnings.warn(reason, ProjectionFallback, stacklevel=2)
    if used == "pca":
        from sklearn.decomposition import PCA

        return PCA(n_components=n_components, random_state=seed).fit_transform(x).astype(np.float32)
    with warnings.catch_warnings():  # umap-learn says a seed makes it single-threaded: the docstring says so
        warnings.filterwarnings("ignore", "n_jobs value", UserWarning)
        return umap_module().UMAP(n_components=n_components, random_state=seed).fit_transform(x).astype(np.float32)
