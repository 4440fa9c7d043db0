"""Views of Compare: a model's position-position matrix beside a sinusoid's or another model's."""

from __future__ import annotations

import numpy as np

from posviz.analysis.similarity import PositionMatrix, row_profile
from posviz.views import figures
from posviz.views.style import name_model
from posviz.views.view import View, view_id


def _label(metric: str) -> str:
    return "dot product" if metric == "dot" else "cosine"


def side_by_side(mine: PositionMatrix, theirs: PositionMatrix, names: tuple[str, str], metric: str
                 ) -> tuple[View, View]:
    """The two matrices as heatmaps on one colour scale (the 1st to 99th percentile of both together).

    Parameters
    ----------
    mine, theirs : PositionMatrix
        Over the same rows.
    names : (str, str)
        What each is (model names, "sinusoid, width 384 (interleaved)").
    metric : {"dot", "cosine"}

    Returns
    -------
    (View, View)
        Ids ``compare-model`` and ``compare-reference``; arrays of each: ``similarity``, ``positions``.
    """
    limits = figures.clip_limits(np.concatenate([mine.values.ravel(), theirs.values.ravel()]))
    first = int(mine.positions[0])
    stride = figures.stride_text(mine.step)
    label = _label(metric)
    views = []
    for m, name, side in ((mine, names[0], "compare-model"), (theirs, names[1], "compare-reference")):
        title = f"{label}, positions {first}–{mine.last}{stride}"
        fig = name_model(figures.position_heatmap(m.values, first, title, label, step=m.step, limits=limits), name)
        views.append(View(fig, title, {"similarity": m.values, "positions": m.positions}, id=side))
    return views[0], views[1]


@view_id("compare-profiles")
def profiles(mine: PositionMatrix, theirs: PositionMatrix, names: tuple[str, str], metric: str, q: int) -> View:
    """Both "position q against all" profiles on one chart, each divided by its maximum.

    Parameters
    ----------
    q : int
        The position; with a stride, the nearest shown row is used.

    Returns
    -------
    View
        Arrays: ``profiles`` [2, n], ``models``, ``positions``.
    """
    first = int(mine.positions[0])
    row = min(int(round((q - first) / mine.step)), mine.values.shape[0] - 1)
    label = _label(metric)
    lines = {names[0]: row_profile(mine.values, row), names[1]: row_profile(theirs.values, row)}
    title = f"{label}(q = {int(mine.positions[row])}, j) ÷ max over j"
    fig = figures.line_figure(lines, title, "position j", f"{label} ÷ max", x=mine.positions)
    return View(fig, title, {"profiles": np.stack(list(lines.values())), "models": list(names),
                             "positions": mine.positions})
