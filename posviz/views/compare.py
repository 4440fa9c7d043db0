"""Views of Compare: a model's position-position matrix beside a sinusoid's or another model's, and many
models side by side (:mod:`posviz.model_table`)."""

from __future__ import annotations

import textwrap
from typing import Sequence

import numpy as np

from posviz.analysis.similarity import PositionMatrix, row_profile
from posviz.loading import short_name
from posviz.views import figures
from posviz.views.style import name_model, names_its_models
from posviz.views.view import View, view_id

#: Characters per line of a tile's title in :func:`model_grid` (a tile is some 150 pixels wide at 1024 × 768).
TILE_TITLE_CHARS = 18


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


@view_id("compare-models")
def model_grid(matrices: Sequence[PositionMatrix], names: Sequence[str], metric: str) -> View:
    """The position similarity of several models (and references) as small multiples, one colour scale for all:
    the 1st to 99th percentile of every matrix together, as :func:`side_by_side` does for two.

    Parameters
    ----------
    matrices : sequence of PositionMatrix
        Over the same rows, [n, n] each (:attr:`posviz.model_table.ModelTable.matrices`).
    names : sequence of str
        What each is; a tile's title is its short name (:func:`posviz.loading.short_name`: no folder path),
        wrapped at :data:`TILE_TITLE_CHARS` characters a line.
    metric : {"dot", "cosine"}

    Returns
    -------
    View
        Arrays: ``similarity`` [k, n, n] (NPZ only), ``models``, ``positions``.
    """
    stack = np.stack([m.values for m in matrices])
    first = matrices[0]
    label = _label(metric)
    title = f"{label.capitalize()} similarity of each model, positions {int(first.positions[0])}–{first.last}"
    titles = ["<br>".join(textwrap.wrap(short_name(name), TILE_TITLE_CHARS)) for name in names]
    fig = figures.small_multiples(stack, titles, title, *figures.clip_limits(stack.ravel()),
                                  names=("position", "position"), columns=figures.tile_columns(len(matrices)),
                                  first=int(first.positions[0]))
    return View(names_its_models(fig), title, {"similarity": stack, "models": list(names), "positions": first.positions})


@view_id("compare-profiles")
def profiles(matrices: Sequence[PositionMatrix], names: Sequence[str], metric: str, q: int) -> View:
    """The "position q against all" profiles of several matrices on one chart, each divided by its maximum.

    Parameters
    ----------
    matrices : sequence of PositionMatrix
        Over the same rows (the model and its reference on the Compare page; every model of a table).
    names : sequence of str
        One line each, in the legend.
    metric : {"dot", "cosine"}
    q : int
        The position; with a stride, the nearest shown row is used.

    Returns
    -------
    View
        Arrays: ``profiles`` [k, n], ``models``, ``positions``.
    """
    first = matrices[0]
    start = int(first.positions[0])
    row = min(int(round((q - start) / first.step)), first.values.shape[0] - 1)
    label = _label(metric)
    lines = {name: row_profile(m.values, row) for m, name in zip(matrices, names)}
    title = f"{label}(q = {int(first.positions[row])}, j) ÷ max over j"
    fig = figures.line_figure(lines, title, "position j", f"{label} ÷ max", x=first.positions)
    return View(names_its_models(fig), title, {"profiles": np.stack(list(lines.values())), "models": list(names),
                                               "positions": first.positions})
