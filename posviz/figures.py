"""Pure figure builders: numpy arrays in, plotly figures out (no Streamlit).

Arrays are passed to plotly as numpy float32 so plotly sends them to the browser as binary
typed arrays, not as JSON lists of decimals. Token axes are numeric with token tick labels, so
that repeated tokens ("the" twice) keep their own row and column.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from posviz.analysis import block_mean

#: Sequential, colour-blind-safe scale for similarities and attention.
SEQUENTIAL = "Viridis"
#: Diverging scale (centred on 0) for raw vector components.
DIVERGING = "RdBu_r"
#: Colour-blind-safe qualitative colours (Okabe & Ito) for position ranges and parts; the two
#: blues are far apart so that five lines never show two alike.
QUALITATIVE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9", "#000000", "#F0E442"]
#: Beyond this many tokens an axis shows indices, and hover the tokens.
MAX_LABELS = 128

_LAYOUT = dict(
    template="plotly_white",
    font=dict(size=15),
    margin=dict(l=70, r=30, t=60, b=60),
    colorway=QUALITATIVE,
)


def _figure(title: str, height: int = 560) -> go.Figure:
    fig = go.Figure()
    fig.update_layout(title=title, height=height, **_LAYOUT)
    return fig


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def clip_limits(values: np.ndarray, percentile: float = 99.0) -> tuple[float, float]:
    """Colour limits at the ``100 - percentile`` and ``percentile`` percentiles of ``values``.

    A few outliers (BERT's position 0 has a norm five times the others) would otherwise take the
    whole colour scale; hover still shows the true value.
    """
    low, high = np.nanpercentile(values, [100 - percentile, percentile])
    return float(low), float(high)


def _square(fig: go.Figure) -> None:
    """Equal x and y units, the plot shrunk to its data instead of padded."""
    fig.update_xaxes(constrain="domain")
    fig.update_yaxes(autorange="reversed", scaleanchor="x", constrain="domain")


def position_heatmap(matrix: np.ndarray, first: int, title: str, colorbar: str, clip: bool = True, step: int = 1,
                     names: tuple[str, str] = ("position", "position"),
                     limits: tuple[float, float] | None = None, max_cells: int = 512) -> go.Figure:
    """Heatmap of a position-position matrix whose rows and columns start at position ``first``.

    Parameters
    ----------
    matrix : np.ndarray
        [n, n], e.g. P·Pᵀ over positions ``first .. first + n - 1``.
    first : int
        0-based position of row and column 0.
    title, colorbar : str
        Figure title and colour-bar title.
    clip : bool
        Colours span the 1st to 99th percentile (:func:`clip_limits`) instead of min to max;
        the subtitle says so.
    step : int
        Row i is position ``first + step·i`` (a stride over a long range).
    names : (str, str)
        What rows and columns are ("position"; "query" and "key" for a bias).
    limits : (float, float), optional
        Colour range shared with another figure; overrides ``clip``.
    max_cells : int
        The plot is about 600 pixels wide: a larger matrix is sent as block means
        (:func:`posviz.analysis.block_mean`) of at most ``max_cells`` per side, said in the subtitle.
    """
    zmin, zmax = limits or (clip_limits(matrix) if clip else (None, None))
    matrix, block = block_mean(matrix, max_cells)
    axis = first + step * block * np.arange(matrix.shape[0])
    notes = ([f"means of {block}×{block} blocks"] if block > 1 else []) + (
        ["colours clipped to the 1st–99th percentile; hover shows true values"] if clip and not limits else [])
    fig = _figure(title + (f"<br><sup>{'; '.join(notes)}</sup>" if notes else ""), height=640)
    fig.add_trace(go.Heatmap(
        z=_f32(matrix), x=axis, y=axis, zmin=zmin, zmax=zmax, colorscale=SEQUENTIAL,
        colorbar=dict(title=colorbar),
        hovertemplate=f"{names[0]} %{{y}} · {names[1]} %{{x}}<br>%{{z:.5g}}<extra></extra>",
    ))
    fig.update_xaxes(title=names[1])
    fig.update_yaxes(title=names[0])
    _square(fig)
    return fig


def row_profile_figure(profile: np.ndarray, q: int, title: str, ylabel: str, x: np.ndarray | None = None) -> go.Figure:
    """Line of "position q against all": ``profile[j]`` against position ``x[j]`` (default j), q marked."""
    fig = _figure(title, height=420)
    x = np.arange(len(profile)) if x is None else x
    fig.add_trace(go.Scatter(x=x, y=_f32(profile), mode="lines", name=f"q = {q}",
                             hovertemplate="position %{x}<br>%{y:.4f}<extra></extra>"))
    right_half = q > (x[0] + x[-1]) / 2
    fig.add_vline(x=q, line_dash="dot", line_color="#D55E00", annotation_text=f"q = {q}",
                  annotation_position="bottom left" if right_half else "bottom right")
    fig.update_xaxes(title="position j")
    fig.update_yaxes(title=ylabel)
    return fig


def vector_heatmap(matrix: np.ndarray, title: str, row_title: str, row_labels=None, first: int = 0,
                   step: int = 1, max_rows: int = 512) -> go.Figure:
    """Raw vectors as a heatmap: rows (positions or tokens) against dimensions, centred on 0.

    Parameters
    ----------
    matrix : np.ndarray
        [rows, width].
    row_labels : list of str, optional
        Token labels; rows are numbered ``first + step·i`` when omitted.
    max_rows : int
        More numbered rows than this are shown every k-th (exact values), said in the title.
    """
    if row_labels is None and matrix.shape[0] > max_rows:
        every = -(-matrix.shape[0] // max_rows)
        matrix, step = matrix[::every], step * every
        title += f" (every {step}th {row_title} shown)"
    rows = np.arange(matrix.shape[0])
    limit = clip_limits(np.abs(matrix), 99.5)[1] or 1.0
    fig = _figure(title + "<br><sup>colours clipped to the 99.5th percentile of |value|</sup>",
                  height=max(360, min(720, 22 * len(rows) + 160)))
    fig.add_trace(go.Heatmap(
        z=_f32(matrix), y=rows if row_labels else first + step * rows, colorscale=DIVERGING, zmid=0,
        zmin=-limit, zmax=limit, colorbar=dict(title="value"),
        hovertemplate=f"{row_title} %{{y}} · dimension %{{x}}<br>%{{z:.5g}}<extra></extra>",
    ))
    fig.update_xaxes(title="dimension")
    fig.update_yaxes(title=row_title, autorange="reversed")
    if row_labels and len(row_labels) <= MAX_LABELS:
        fig.update_yaxes(tickvals=rows, ticktext=list(row_labels))
    return fig


def line_figure(series: dict[str, np.ndarray], title: str, xlabel: str, ylabel: str, x_labels=None,
                x: np.ndarray | None = None, markers: bool = False, log_y: bool = False) -> go.Figure:
    """One line per named series against ``x`` (default: their index) or against token labels."""
    fig = _figure(title, height=420)
    for name, values in series.items():
        fig.add_trace(go.Scatter(x=np.arange(len(values)) if x is None else x, y=_f32(values), name=name,
                                 mode="lines+markers" if markers or (x_labels and len(x_labels) <= MAX_LABELS)
                                 else "lines", text=list(x_labels) if x_labels else None))
    if log_y:
        fig.update_yaxes(type="log")
    fig.update_xaxes(title=xlabel)
    if x_labels and len(x_labels) <= MAX_LABELS:
        fig.update_xaxes(tickvals=np.arange(len(x_labels)), ticktext=list(x_labels), tickangle=-45)
    fig.update_yaxes(title=ylabel)
    return fig


def projection_figure(coords: np.ndarray, boundaries: list[int], path: bool, title: str,
                      axis_name: str = "component", positions: np.ndarray | None = None) -> go.Figure:
    """Scatter of projected positions (2-D or 3-D), coloured by position range.

    Parameters
    ----------
    coords : np.ndarray
        [n, 2] or [n, 3]; row p is position p.
    boundaries : list of int
        Positions where a new colour range starts, e.g. ``[128]`` gives 0-127 and 128-(n-1).
    path : bool
        Also draw the line through consecutive positions.
    axis_name : str
        Axes are titled "<axis_name> 1", "<axis_name> 2" (e.g. "UMAP", "PC").
    positions : np.ndarray, optional
        The position of each row (a stride over a long range); ``arange(n)`` by default.
    """
    n, dims = coords.shape
    positions = np.arange(n) if positions is None else np.asarray(positions)
    cuts = np.searchsorted(positions, sorted(set(boundaries)))
    edges = [0] + [int(c) for c in cuts if 0 < c < n] + [n]
    scatter = go.Scatter3d if dims == 3 else go.Scatter
    fig = _figure(title, height=640)
    axes = dict(zip("xyz", coords.T))
    if path:
        fig.add_trace(scatter(**{k: _f32(v) for k, v in axes.items()}, mode="lines", name="path p → p+1",
                              line=dict(color="rgba(60,60,60,0.6)", width=2 if dims == 2 else 4), hoverinfo="skip"))
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        fig.add_trace(scatter(
            **{k: _f32(v[lo:hi]) for k, v in axes.items()}, mode="markers",
            name=f"positions {positions[lo]}–{positions[hi - 1]}", customdata=positions[lo:hi],
            marker=dict(size=4 if dims == 3 else 7, color=QUALITATIVE[i % len(QUALITATIVE)]),
            hovertemplate="position %{customdata}<extra></extra>",
        ))
    fig.update_layout(legend=dict(itemsizing="constant"))
    titles = [f"{axis_name} {i + 1}" for i in range(dims)]
    if dims == 3:
        fig.update_layout(scene=dict(xaxis_title=titles[0], yaxis_title=titles[1], zaxis_title=titles[2]))
    else:
        fig.update_xaxes(title=titles[0])
        fig.update_yaxes(title=titles[1])
    return fig


def small_multiples(matrices: np.ndarray, titles: list[str], title: str, zmin: float | None = None,
                    zmax: float | None = None, names: tuple[str, str] = ("row", "column"), columns: int = 4,
                    max_cells: int = 96, first: int = 0) -> go.Figure:
    """Square matrices side by side on one colour scale (heads of a layer, heads of a bias,
    frequency bands of a rotary kernel).

    Parameters
    ----------
    matrices : np.ndarray
        [k, n, n]; NaN cells (masked) stay blank.
    titles : list of str
        One title per matrix.
    zmin, zmax : float, optional
        Shared colour range; the data's range where omitted.
    names : (str, str)
        What rows and columns are, for the hover text.
    max_cells : int
        A tile is about 230 pixels high: larger matrices are shown as block means
        (:func:`posviz.analysis.block_mean`) of at most ``max_cells`` per side, said in the title.
    first : int
        Label of row and column 0.
    """
    matrices, block = block_mean(matrices, max_cells)
    if block > 1:
        title += f" · means of {block}×{block} blocks"
    count = matrices.shape[0]
    rows = -(-count // columns)
    fig = make_subplots(rows=rows, cols=columns, subplot_titles=titles, horizontal_spacing=0.02,
                        vertical_spacing=0.3 / rows)
    idx = first + np.arange(matrices.shape[-1]) * block
    row_name, col_name = names
    where = (f"{row_name} %{{y}} → {col_name} %{{x}}" if block == 1
             else f"{row_name}s %{{y}}…, {col_name}s %{{x}}… ({block}×{block} block mean)")
    for i in range(count):
        fig.add_trace(go.Heatmap(z=_f32(matrices[i]), x=idx, y=idx, coloraxis="coloraxis",
                                 hovertemplate=f"{titles[i]}<br>{where}<br>%{{z:.4f}}<extra></extra>"),
                      row=i // columns + 1, col=i % columns + 1)
    finite = matrices[np.isfinite(matrices)]
    fig.update_layout(title=title, height=230 * rows + 100, **_LAYOUT, coloraxis=dict(
        colorscale=SEQUENTIAL, cmin=float(finite.min()) if zmin is None else zmin,
        cmax=float(finite.max()) if zmax is None else zmax))
    fig.update_xaxes(showticklabels=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, showgrid=False, autorange="reversed")
    return fig


def heads_grid(patterns: np.ndarray, title: str, zmax: float | None = None) -> go.Figure:
    """All attention heads of one layer, [heads, queries, keys], as small multiples from 0 to ``zmax``."""
    return small_multiples(patterns, [f"head {h}" for h in range(patterns.shape[0])], title, zmin=0, zmax=zmax,
                           names=("query", "key"))


def token_heatmap(matrix: np.ndarray, tokens: list[str], title: str, colorbar: str,
                  row_title: str = "token", col_title: str = "token", zmin: float | None = None,
                  col_tokens: list[str] | None = None, zmax: float | None = None) -> go.Figure:
    """A token-token matrix with token labels: an attention pattern (query rows, key columns) or
    the similarity of input representations.

    Parameters
    ----------
    matrix : np.ndarray
        [num_tokens, num_tokens], or [num_tokens, len(col_tokens)] when ``col_tokens`` is given.
    tokens : list of str
        Labels of the rows, and of the columns unless ``col_tokens`` is given; beyond 128
        tokens on either axis the axes show indices only.
    zmin, zmax : float, optional
        Colour range (0 to the layer's largest weight for attention, shared with the heads grid).
    col_tokens : list of str, optional
        Labels of the columns when they are other tokens than the rows (cross attention:
        target queries against source keys).
    """
    cols = list(tokens) if col_tokens is None else list(col_tokens)
    rows_idx = np.arange(len(tokens))
    cols_idx = np.arange(len(cols))
    labelled = len(tokens) <= 128 and len(cols) <= 128
    fig = _figure(title, height=max(420, min(900, 20 * len(tokens) + 200)))
    fig.add_trace(go.Heatmap(
        z=_f32(matrix), x=cols_idx, y=rows_idx, zmin=zmin, zmax=zmax, colorscale=SEQUENTIAL, colorbar=dict(title=colorbar),
        customdata=np.array([[(a, b) for b in cols] for a in tokens], dtype=object) if labelled else None,
        hovertemplate=(f"{row_title} %{{y}} %{{customdata[0]}} · {col_title} %{{x}} %{{customdata[1]}}" if labelled
                       else f"{row_title} %{{y}} · {col_title} %{{x}}") + "<br>%{z:.4f}<extra></extra>",
    ))
    fig.update_xaxes(title=col_title, tickangle=-60, **(dict(tickvals=cols_idx, ticktext=cols) if labelled else {}))
    fig.update_yaxes(title=row_title, **(dict(tickvals=rows_idx, ticktext=list(tokens)) if labelled else {}))
    _square(fig)
    return fig
