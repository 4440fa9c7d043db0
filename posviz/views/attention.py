"""Views of attention patterns: one head, the mean over heads, and every head of a layer."""

from __future__ import annotations

import numpy as np

from posviz.analysis.attention import SIDES, STACKS
from posviz.views import figures
from posviz.views.view import View


def _axes(stack: str | None) -> tuple[str, str, str, str]:
    """(row title, column title, title suffix, grid axes) of a stack (None: a model with one stack)."""
    if stack is None:
        return "query", "key", "", "rows = queries, columns = keys"
    rows, cols = SIDES[stack]
    return f"query ({rows})", f"key ({cols})", f" · {STACKS[stack]}", f"rows = {rows} queries, columns = {cols} keys"


def _arrays(values: np.ndarray, query_tokens: list[str], key_tokens: list[str]) -> dict:
    return {"attention": values, "query_tokens": query_tokens, "key_tokens": key_tokens}


def attention_head(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int, head: int,
                   stack: str | None = None) -> View:
    """The attention pattern of one head with token labels, on the layer's colour scale (0 to its
    largest weight, shared with :func:`attention_mean` and :func:`attention_grid`).

    Parameters
    ----------
    patterns : np.ndarray
        float32 [heads, queries, keys]: every head of the layer (rows sum to 1).
    query_tokens, key_tokens : list of str
    layer, head : int
        0-based; the layer only names the figure.
    stack : {"encoder", "decoder", "cross"} or None
        The stack of an encoder-decoder model; None for a model with one stack.

    Returns
    -------
    View
        Arrays: ``attention`` [queries, keys], ``query_tokens``, ``key_tokens``.
    """
    rows, cols, suffix, _ = _axes(stack)
    title = f"Layer {layer}, head {head}{suffix}"
    fig = figures.token_heatmap(patterns[head], query_tokens, title, "weight", rows, cols, zmin=0,
                                zmax=float(patterns.max()), col_tokens=key_tokens)
    return View(fig, title, _arrays(patterns[head], query_tokens, key_tokens))


def attention_mean(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int,
                   stack: str | None = None) -> View:
    """The mean of a layer's heads, on the layer's colour scale (see :func:`attention_head`)."""
    rows, cols, suffix, _ = _axes(stack)
    title = f"Layer {layer}, mean over heads{suffix}"
    mean = patterns.mean(axis=0)
    fig = figures.token_heatmap(mean, query_tokens, title, "weight", rows, cols, zmin=0, zmax=float(patterns.max()),
                                col_tokens=key_tokens)
    return View(fig, title, _arrays(mean, query_tokens, key_tokens))


def attention_grid(patterns: np.ndarray, query_tokens: list[str], key_tokens: list[str], *, layer: int,
                   stack: str | None = None) -> View:
    """Every head of a layer as small multiples, on the layer's colour scale (see :func:`attention_head`).

    Returns
    -------
    View
        Arrays: ``attention`` [heads, queries, keys], ``query_tokens``, ``key_tokens``.
    """
    _, _, suffix, grid_axes = _axes(stack)
    title = f"Layer {layer}{suffix}: every head ({grid_axes})"
    fig = figures.heads_grid(patterns, title, zmax=float(patterns.max()))
    return View(fig, title, _arrays(patterns, query_tokens, key_tokens))
