"""Low-dimensional projections of position vectors: UMAP (umap-learn) and PCA (scikit-learn)."""

from __future__ import annotations

import numpy as np
import torch

#: Projection methods, as :func:`project` names them.
METHODS = ("umap", "pca")


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
    raise ValueError(f"method must be one of {METHODS}, not {method!r}")
