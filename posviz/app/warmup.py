"""Work done once per process in the background, so that the first visitor of a page does not wait for it."""

from __future__ import annotations

import threading

import numpy as np
import pandas  # noqa: F401  imported here, once, so the warm-up thread never imports it beside a page
import streamlit as st

from posviz.analysis.projection import project


@st.cache_resource(show_spinner=False)
def warm_up() -> threading.Event:
    """Import umap-learn (with scikit-learn, SciPy, numba) and compile its numba code in a
    background thread, once per process, so the first projection is fast.

    Returns
    -------
    threading.Event
        Set once the imports are done: a page must wait for it before it projects, so that no
        module is imported by two threads at once (a half-imported module breaks both).
    """
    imported = threading.Event()

    def run() -> None:
        try:
            import umap  # noqa: F401
        finally:
            imported.set()
        project(np.random.default_rng(0).normal(size=(64, 8)), "umap")

    threading.Thread(target=run, name="posviz-umap-warm-up", daemon=True).start()
    return imported
