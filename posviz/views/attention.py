"""Views of attention patterns: one head, the mean over heads, and every head of a layer, and a window of
a long input at full resolution; :func:`layer_views` and :func:`window_view` make them from a reading of
any length (:func:`posviz.analysis.attention_reading.read_attention`), as the Attention page shows them,
:func:`layer_tops` the colour scales of all its layers at once."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from posviz.analysis.attention import SIDES, STACKS, without_special
from posviz.analysis.attention_budget import Window
from posviz.analysis.attention_reading import AttentionReading
from posviz.views import figures
from posviz.views.limits import MAX_PAIR_CELLS
from posviz.views.style import clipped_colour_ticks
from posviz.views.view import View, view_id

#: Rows of an attention pattern with special tokens hidden are greyed (not rescaled) where less than
#: this share of their weight is on the tokens shown.
VISIBLE_AT_LEAST = 0.1
#: With clipped colours, a layer's colour scale ends at this percentile of its weights, not at the largest.
CLIP_PERCENTILE = 99
#: What the subtitle of a figure with clipped colours says.
CLIPPED = f"colours: top {100 - CLIP_PERCENTILE} % clipped".replace(" ", "\u00a0")  # one line, never broken


def marked(tokens: list[str], generated: int) -> list[str]:
    """The token labels with the last ``generated`` ones (a model's own continuation) marked ⟨…⟩."""
    return tokens[:len(tokens) - generated] + [f"⟨{t}⟩" for t in tokens[len(tokens) - generated:]]


def _axes(stack: str | None) -> tuple[str, str, str, str]:
    """(row title, column title, title suffix, grid axes) of a stack (None: a model with one stack)."""
    if stack is None:
        return "query", "key", "", "rows = queries, columns = keys"
    rows, cols = SIDES[stack]
    return f"query ({rows})", f"key ({cols})", f" · {STACKS[stack]}", f"rows = {rows} queries, columns = {cols} keys"


def _arrays(values: np.ndarray, query_tokens: list[str], key_tokens: list[str], hidden=None) -> dict:
    arrays = {"attention": values, "query_tokens": query_tokens, "key_tokens": key_tokens}
    return arrays if hidden is None else {**arrays, "hidden": hidden}


def _greyed(patterns: np.ndarray, hidden: np.ndarray | None) -> np.ndarray:
    """The patterns with the rows that hold under :data:`VISIBLE_AT_LEAST` of their weight set to NaN."""
    if hidden is None:
        return patterns
    return np.where(((1 - hidden) < VISIBLE_AT_LEAST)[..., None], np.nan, patterns)


def colour_top(patterns: np.ndarray, hidden: np.ndarray | None = None, clip: bool = False) -> float:
    """The top of a layer's colour scale (its bottom is 0), greyed rows left out (:data:`VISIBLE_AT_LEAST`).

    Parameters
    ----------
    patterns : np.ndarray
        float [heads, queries, keys]: the layer's weights (or block summaries); NaN cells are left out.
    hidden : np.ndarray, optional
        float [heads, queries]: the share of each row hidden with the special tokens.
    clip : bool
        False: the largest weight. True: the :data:`CLIP_PERCENTILE` th percentile of the weights (the
        order statistic at or below it, ``np.percentile(..., method="lower")``, found by a partition:
        :func:`posviz.views.figures.clip_limits` takes four times as long on a 512-token layer, on every rerun),
        so that a few sinks (the weight on [CLS] or [SEP] of a long input) do not leave every other
        cell at the bottom colour; the largest weight where that percentile is 0.

    Returns
    -------
    float
        1.0 where no weight is shown, or every weight shown is 0 (a causal pattern's upper corner).
    """
    values = _greyed(patterns, hidden).ravel()
    if hidden is not None or not np.isfinite(values).all():
        values = values[np.isfinite(values)]
    if not values.size:
        return 1.0
    largest = float(values.max()) or 1.0
    if not clip:
        return largest
    rank = CLIP_PERCENTILE * (values.size - 1) // 100
    return float(np.partition(values, rank)[rank]) or largest


def _scale_top(top: float | None, patterns: np.ndarray, hidden: np.ndarray | None, clip: bool) -> float:
    return colour_top(patterns, hidden, clip) if top is None else top


def _notes(clip: bool) -> tuple[str, ...]:
    return (CLIPPED,) if clip else ()


def _mark_clipped(fig: go.Figure, top: float, clip: bool) -> go.Figure:
    """With ``clip``, the colour bar's top labelled "≥ top" (:func:`~posviz.views.style.clipped_colour_ticks`):
    the bar of a grid's shared colour axis, else of the figure's last trace (the pattern)."""
    if clip:
        bar = fig.layout.coloraxis.colorbar if fig.layout.coloraxis.cmax is not None else fig.data[-1].colorbar
        bar.update(clipped_colour_ticks(top))
    return fig


@view_id("attention-head")
def attention_head(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int, head: int,
                   stack: str | None = None, hidden: np.ndarray | None = None,
                   summary: tuple[int, str] = (1, "mean"), clip: bool = False,
                   top: float | None = None) -> View:
    """The attention pattern of one head with token labels, on the layer's colour scale (0 to its
    largest weight, or with ``clip`` to its percentile :data:`CLIP_PERCENTILE`; shared with
    :func:`attention_mean` and :func:`attention_grid`). Beyond
    :data:`~posviz.views.limits.MAX_PAIR_CELLS` tokens (a cell smaller than a pixel in its column)
    the figure shows block means, said in its subtitle; its arrays keep every weight.

    Parameters
    ----------
    patterns : np.ndarray
        float32 [heads, queries, keys]: every head of the layer (rows sum to 1).
    query_tokens, key_tokens : list of str
    layer, head : int
        0-based; the layer only names the figure.
    stack : {"encoder", "decoder", "cross"} or None
        The stack of an encoder-decoder model; None for a model with one stack.
    hidden : np.ndarray, optional
        float [heads, queries]: the share of each row hidden with the special tokens
        (:func:`posviz.analysis.attention.without_special`); shown beside the pattern, and rows
        below :data:`VISIBLE_AT_LEAST` greyed.
    summary : (int, str)
        ``(b, "mean" | "max")`` where ``patterns`` are the block summaries of a long input
        (:meth:`posviz.analysis.attention_reading.LayerAttention.summary`, one cell per b × b tokens);
        the arrays are then those summaries.
    clip : bool
        Colours clipped: the scale ends at the layer's :data:`CLIP_PERCENTILE` th percentile (said in
        the subtitle); the cells above it take its top colour, hover and arrays keep every weight.
    top : float, optional
        The scale's top where the caller has it (:func:`layer_views` computes it once for its three
        views); None: :func:`colour_top` of ``patterns``.

    Returns
    -------
    View
        Arrays: ``attention`` [queries, keys], ``query_tokens``, ``key_tokens`` (and ``hidden``).
    """
    rows, cols, suffix, _ = _axes(stack)
    title = f"Layer {layer}, head {head}{suffix}"
    row_hidden = None if hidden is None else hidden[head]
    top = _scale_top(top, patterns, hidden, clip)
    fig = figures.token_heatmap(patterns[head], query_tokens, title, "weight", rows, cols, zmin=0, zmax=top,
                                col_tokens=key_tokens, hidden=row_hidden, threshold=VISIBLE_AT_LEAST,
                                max_cells=MAX_PAIR_CELLS, summary=summary, notes=_notes(clip))
    return View(_mark_clipped(fig, top, clip), title, _arrays(patterns[head], query_tokens, key_tokens, row_hidden))


@view_id("attention-mean")
def attention_mean(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int,
                   stack: str | None = None, hidden: np.ndarray | None = None,
                   summary: tuple[int, str] = (1, "mean"), clip: bool = False,
                   top: float | None = None) -> View:
    """The mean of a layer's heads, on the layer's colour scale (see :func:`attention_head`); with
    ``hidden``, the mean share hidden; of block maxima, the mean of the heads' maxima (said in its title)."""
    rows, cols, suffix, _ = _axes(stack)
    title = f"Layer {layer}, mean over heads{' of the block maxima' if summary[1] == 'max' and summary[0] > 1 else ''}{suffix}"
    mean = patterns.mean(axis=0)
    row_hidden = None if hidden is None else hidden.mean(axis=0)
    top = _scale_top(top, patterns, hidden, clip)
    fig = figures.token_heatmap(mean, query_tokens, title, "weight", rows, cols, zmin=0, zmax=top,
                                col_tokens=key_tokens, hidden=row_hidden, threshold=VISIBLE_AT_LEAST,
                                max_cells=MAX_PAIR_CELLS, summary=summary, notes=_notes(clip))
    return View(_mark_clipped(fig, top, clip), title, _arrays(mean, query_tokens, key_tokens, row_hidden))


@view_id("attention-grid")
def attention_grid(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int,
                   stack: str | None = None, hidden: np.ndarray | None = None,
                   summary: tuple[int, str] = (1, "mean"), clip: bool = False,
                   top: float | None = None) -> View:
    """Every head of a layer as small multiples, on the layer's colour scale (see :func:`attention_head`);
    with ``hidden``, each head's rows under :data:`VISIBLE_AT_LEAST` left blank.

    Returns
    -------
    View
        Arrays: ``attention`` [heads, queries, keys], ``query_tokens``, ``key_tokens`` (and ``hidden``).
    """
    _, _, suffix, grid_axes = _axes(stack)
    title = f"Layer {layer}{suffix}: every head ({grid_axes})"
    top = _scale_top(top, patterns, hidden, clip)
    fig = figures.heads_grid(_greyed(patterns, hidden), title, zmax=top, summary=summary, notes=_notes(clip))
    return View(_mark_clipped(fig, top, clip), title, _arrays(patterns, query_tokens, key_tokens, hidden))


@view_id("attention-window")
def attention_window(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], window, *, layer: int,
                     head: int, stack: str | None = None, clip: bool = False) -> View:
    """A window of one head's pattern at full resolution: every weight, token labels where they can be
    read, axes counting the input's token indices (a zoom into a long input's summary); its colour scale
    from 0 to the window's largest weight of any head, or with ``clip`` to their :data:`CLIP_PERCENTILE` th
    percentile (:func:`colour_top`, said as for :func:`attention_head`).

    Parameters
    ----------
    patterns : np.ndarray
        float32 [heads, q1 − q0, k1 − k0]: the window of every head of the layer.
    query_tokens, key_tokens : list of str
        The whole input's tokens (the window's are taken from them).
    window : posviz.analysis.attention_budget.Window
    layer, head : int
    clip : bool

    Returns
    -------
    View
        Arrays: ``attention`` [q1 − q0, k1 − k0], the window's ``query_tokens`` and ``key_tokens``.
    """
    rows, cols, suffix, _ = _axes(stack)
    title = (f"Layer {layer}, head {head}{suffix}: queries {window.q0}–{window.q1 - 1}, "
             f"keys {window.k0}–{window.k1 - 1}")
    queries, keys = query_tokens[window.q0:window.q1], key_tokens[window.k0:window.k1]
    top = colour_top(patterns, None, clip)
    fig = figures.token_heatmap(patterns[head], queries, title, "weight", rows, cols, zmin=0, zmax=top,
                                col_tokens=keys, max_cells=MAX_PAIR_CELLS, origin=(window.q0, window.k0),
                                notes=_notes(clip))
    return View(_mark_clipped(fig, top, clip), title, _arrays(patterns[head], queries, keys))


def _shown_stack(reading: AttentionReading, encoder_decoder: bool) -> str | None:
    return reading.stack if encoder_decoder else None


def _shown_layer(reading: AttentionReading, layer: int, generated: int, reduction: str, special: set[str] | None
                 ) -> tuple[int, np.ndarray, list[str], list[str], np.ndarray | None]:
    """One layer of a reading as :func:`layer_views` draws it: (block, patterns, query tokens, key tokens,
    hidden shares or None); see there."""
    kept = reading.layer(layer)
    query_tokens, key_tokens = marked(reading.query_tokens, generated), marked(reading.key_tokens, generated)
    patterns, hidden = kept.summary(reduction), None
    if special is not None and kept.block == 1:
        patterns, query_tokens, key_tokens, hidden = without_special(patterns, query_tokens, key_tokens, special)
    return kept.block, patterns, query_tokens, key_tokens, hidden


def layer_tops(reading: AttentionReading, *, generated: int = 0, reduction: str = "mean",
               special: set[str] | None = None, clip: bool = False) -> dict[int, float]:
    """The top of the colour scale (:func:`colour_top`) of every layer the reading kept, as
    :func:`layer_views` draws it (the arguments are its own): what a page computes once per reading
    and setting, so that moving from layer to layer does not find a layer's percentile again (a
    partition of every weight: some 7 ms for a 512-token layer of twelve heads alone, three times
    that beside a browser drawing the page on the same cores).

    Returns
    -------
    dict of int to float
        By layer index, every layer of ``reading.layers``.
    """
    tops = {}
    for layer in reading.layers:
        _, patterns, _, _, hidden = _shown_layer(reading, layer, generated, reduction, special)
        tops[layer] = colour_top(patterns, hidden, clip)
    return tops


def layer_views(reading: AttentionReading, layer: int, head: int, *, encoder_decoder: bool = False,
                generated: int = 0, reduction: str = "mean", special: set[str] | None = None, clip: bool = False,
                top: float | None = None) -> tuple[View, View, View]:
    """The three views of one layer of a reading: :func:`attention_head`, :func:`attention_mean` and
    :func:`attention_grid`, on one colour scale.

    The layer as the reading kept it: every weight, or the block summary ``reduction`` of a long
    input (:meth:`~posviz.analysis.attention_reading.LayerAttention.summary`); the last ``generated``
    tokens (a continuation) marked ⟨…⟩ (:func:`marked`); with ``special``, those tokens hidden and each
    row renormalised (:func:`posviz.analysis.attention.without_special`), where the layer is whole.

    Parameters
    ----------
    reading : AttentionReading
        It keeps ``layer``.
    layer, head : int
        0-based, of the reading's stack.
    encoder_decoder : bool
        The titles name the stack (an encoder-decoder model's).
    generated : int
    reduction : {"mean", "max"}
    special : set of str, optional
        The tokenizer's special tokens (``tokenizer.all_special_tokens``); None: nothing hidden.
    clip : bool
        The colour scale clipped to the layer's :data:`CLIP_PERCENTILE` th percentile (see
        :func:`attention_head`).
    top : float, optional
        The scale's top where the caller has it (:func:`layer_tops` of the same arguments); None:
        :func:`colour_top` of the layer, found here.

    Returns
    -------
    (View, View, View)
        The head, the mean over heads, every head.

    Raises
    ------
    ValueError
        Where the reading did not keep ``layer``.
    """
    block, patterns, query_tokens, key_tokens, hidden = _shown_layer(reading, layer, generated, reduction, special)
    shown = dict(layer=layer, stack=_shown_stack(reading, encoder_decoder), hidden=hidden,
                 summary=(block, reduction), clip=clip, top=_scale_top(top, patterns, hidden, clip))
    return (attention_head(patterns, query_tokens, key_tokens, head=head, **shown),
            attention_mean(patterns, query_tokens, key_tokens, **shown),
            attention_grid(patterns, query_tokens, key_tokens, **shown))


def window_view(reading: AttentionReading, layer: int, head: int, window: Window, *, encoder_decoder: bool = False,
                generated: int = 0, clip: bool = False) -> View:
    """:func:`attention_window` of one layer of a reading: the weights in ``window``, exact, from the
    layer kept whole or from the window a summarised layer keeps (the reading's own ``window``).

    Parameters
    ----------
    reading : AttentionReading
    layer, head : int
    window : Window
        Inside the pattern (:meth:`Window.clipped`); for a summarised layer, the reading's window.
    encoder_decoder, generated, clip
        As for :func:`layer_views`.

    Returns
    -------
    View
    """
    kept = reading.layer(layer)
    zoomed = kept.window_patterns if kept.block > 1 else kept.patterns[:, window.q0:window.q1, window.k0:window.k1]
    return attention_window(zoomed, marked(reading.query_tokens, generated), marked(reading.key_tokens, generated),
                            window, layer=layer, head=head, stack=_shown_stack(reading, encoder_decoder), clip=clip)
