"""Figure builders: numpy arrays in, plotly figures out (the views draw with these).

Arrays are passed to plotly as numpy float32 so plotly sends them to the browser as binary
typed arrays, not as JSON lists of decimals. Token axes are numeric with token tick labels, so
that repeated tokens ("the" twice) keep their own row and column. The look (colours, fonts,
titles, tick labels, presentation mode) is :mod:`posviz.views.style`'s.

Traces are given to ``add_trace`` as dicts (``dict(type="heatmap", …)``): plotly validates them once,
there; a ``go.Heatmap`` would be validated when made and again when added (about 0.7 ms a trace, and
twelve traces a grid of heads).
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from posviz.analysis.similarity import block_mean
from posviz.views.limits import MAX_CELLS, MAX_LABELS, MAX_TILE_CELLS
from posviz.views.style import (
    DIVERGING, MISSING, QUALITATIVE, REFERENCE, SEQUENTIAL, TEMPLATE, TICK_LABELS, TILE_TITLE_FONT, TITLE_CHARS,
    assign_validated, colour_bar, leave_room_for_tile_titles, legend_below, line_colours, log_ticks, new_figure,
    scene_3d, set_axes, set_title, token_ticks, wrap,
)

#: Token labels per axis of a heatmap beside its "hidden" strip (its square is some two thirds of a plain one's).
BESIDE_STRIP_TICK_LABELS = 16


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def clip_limits(values: np.ndarray, percentile: float = 99.0) -> tuple[float, float]:
    """Colour limits at the ``100 - percentile`` and ``percentile`` percentiles of ``values``.

    A few outliers (BERT's position 0 has a norm five times the others) would otherwise take the
    whole colour scale; hover still shows the true value.
    """
    low, high = np.nanpercentile(values, [100 - percentile, percentile])
    return float(low), float(high)


#: Width ÷ height of a square heatmap's figure: its colour bar and row labels take more width than
#: its title and column labels take height, so a figure this much wider than high leaves the plot
#: area limited by its height, as high as its colour bar (the plot shrinks toward the bar).
HEATMAP_ASPECT = 1.1


def _square(fig: go.Figure, col: int | None = None) -> None:
    """Equal x and y units, the plot shrunk to its data instead of padded (of one subplot column)."""
    set_axes(fig, "x", col, constrain="domain", constraintoward="right")  # next to its colour bar
    set_axes(fig, "y", col, autorange="reversed", scaleanchor="x", constrain="domain")


#: Values of an axis (a position heatmap's rows, a chart's layers) up to which each has its tick.
FEW_TICKS = 16


def position_heatmap(matrix: np.ndarray, first: int, title: str, colorbar: str, clip: bool = True, step: int = 1,
                     names: tuple[str, str] = ("position", "position"),
                     limits: tuple[float, float] | None = None, max_cells: int = MAX_CELLS) -> go.Figure:
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
        ["colours clipped to the 1st–99th percentile"] if clip and not limits else [])
    fig = new_figure(title, height=None, notes=notes, aspect=HEATMAP_ASPECT)
    fig.add_trace(dict(type="heatmap",
        z=_f32(matrix), x=axis, y=axis, zmin=zmin, zmax=zmax, colorscale=SEQUENTIAL,
        colorbar=colour_bar(colorbar),
        hovertemplate=f"{names[0]} %{{y}} · {names[1]} %{{x}}<br>%{{z:.5g}}<extra></extra>",
    ))
    # a few rows: a tick on each (plotly's own fall between positions, at halves)
    ticks = dict(tick0=first, dtick=step * block) if len(axis) <= FEW_TICKS else {}
    set_axes(fig, "x", title=names[1], **ticks)
    set_axes(fig, "y", title=names[0], **ticks)
    _square(fig)
    return fig


def row_profile_figure(profile: np.ndarray, q: int, title: str, ylabel: str, x: np.ndarray | None = None) -> go.Figure:
    """Line of "position q against all": ``profile[j]`` against position ``x[j]`` (default j), q marked."""
    fig = new_figure(title, height=420)
    x = np.arange(len(profile)) if x is None else x
    fig.add_trace(dict(type="scatter", x=x, y=_f32(profile), mode="lines", name=f"q = {q}",
                       hovertemplate="position %{x}<br>%{y:.4f}<extra></extra>"))
    right_half = q > (x[0] + x[-1]) / 2
    fig.add_vline(x=q, line_dash="dot", line_color="#D55E00", annotation_text=f"q = {q}",
                  annotation_position="bottom left" if right_half else "bottom right")
    set_axes(fig, "x", title="position j")
    set_axes(fig, "y", title=ylabel)
    return fig


def vector_heatmap(matrix: np.ndarray, title: str, row_title: str, row_labels=None, first: int = 0,
                   step: int = 1, max_rows: int = MAX_CELLS) -> go.Figure:
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
    notes = []
    if row_labels is None and matrix.shape[0] > max_rows:
        every = -(-matrix.shape[0] // max_rows)
        matrix, step = matrix[::every], step * every
        notes.append(f"every {ordinal(step)} {row_title} shown")
    rows = np.arange(matrix.shape[0])
    limit = clip_limits(np.abs(matrix), 99.5)[1] or 1.0
    fig = new_figure(title, height=max(380, min(720, 22 * len(rows) + 180)),
                     notes=notes + ["colours clipped to the 99.5th percentile of |value|"])
    fig.add_trace(dict(type="heatmap",
        z=_f32(matrix), y=rows if row_labels else first + step * rows, colorscale=DIVERGING, zmid=0,
        zmin=-limit, zmax=limit, colorbar=colour_bar("value"),
        hovertemplate=f"{row_title} %{{y}} · dimension %{{x}}<br>%{{z:.5g}}<extra></extra>",
    ))
    set_axes(fig, "x", title="dimension")
    set_axes(fig, "y", title=row_title, autorange="reversed")
    if row_labels and len(row_labels) <= MAX_LABELS:
        token_ticks(fig, "y", row_labels)
    return fig


#: Longest series name a line chart's legend shows beside the plot; longer ones go in rows below
#: it, for at most LEGEND_BELOW_MOST series (more stay beside the plot, one per line).
LEGEND_BESIDE_CHARS, LEGEND_BELOW_MOST = 16, 6


def line_figure(series: dict[str, np.ndarray], title: str, xlabel: str, ylabel: str, x_labels=None,
                x: np.ndarray | None = None, markers: bool = False, log_y: bool = False,
                references: tuple[str, ...] = ()) -> go.Figure:
    """One line per named series against ``x`` (default: their index) or against token labels.

    Parameters
    ----------
    series : dict of str to np.ndarray
        Name -> values [k]. Each line gets its own colour (:func:`posviz.views.style.line_colours`:
        12 or 16 heads included).
    x_labels : list of str, optional
        Token labels of the x positions (thinned so that none overlap; hover names each).
    log_y : bool
        A log y axis labelled in plain numbers (:func:`posviz.views.style.log_ticks`).
    references : tuple of str
        Names of series drawn as black dashed reference lines (a sinusoid beside a model's heads).

    The legend is beside the plot (the figure as high as its names need), or below it where a name is
    longer than :data:`LEGEND_BESIDE_CHARS` (and there are at most :data:`LEGEND_BELOW_MOST` series).
    """
    fig = new_figure(title, height=max(420, 160 + 24 * len(series)))  # a legend beside it: each name in view
    colours = iter(line_colours(len(series) - len([n for n in series if n in references])))
    labelled = bool(x_labels) and len(x_labels) <= MAX_LABELS
    for name, values in series.items():
        line = REFERENCE if name in references else dict(color=next(colours))
        fig.add_trace(dict(type="scatter", x=np.arange(len(values)) if x is None else x, y=_f32(values), name=name,
                           line=line, mode="lines+markers" if markers or labelled else "lines",
                           text=list(x_labels) if x_labels else None))
    if log_y:
        log_ticks(fig, list(series.values()))
    if max(map(len, series), default=0) > LEGEND_BESIDE_CHARS and len(series) <= LEGEND_BELOW_MOST:
        legend_below(fig)  # long names beside the plot would squeeze it
        fig.layout.height = fig.layout.height + 30 * math.ceil(len(series) / 2)  # its rows, below
    set_axes(fig, "x", title=xlabel)
    if labelled:
        token_ticks(fig, "x", x_labels)
    set_axes(fig, "y", title=ylabel)
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
    scatter = "scatter3d" if dims == 3 else "scatter"
    fig = new_figure(title, height=640)
    axes = dict(zip("xyz", coords.T))
    if path:
        fig.add_trace(dict(type=scatter, **{k: _f32(v) for k, v in axes.items()}, mode="lines", name="path p → p+1",
                           line=dict(color="rgba(60,60,60,0.6)", width=2 if dims == 2 else 4), hoverinfo="skip"))
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        fig.add_trace(dict(
            type=scatter, **{k: _f32(v[lo:hi]) for k, v in axes.items()}, mode="markers",
            name=f"positions {positions[lo]}–{positions[hi - 1]}", customdata=positions[lo:hi],
            marker=dict(size=4 if dims == 3 else 7, color=QUALITATIVE[i % len(QUALITATIVE)]),
            hovertemplate="position %{customdata}<extra></extra>",
        ))
    titles = [f"{axis_name} {i + 1}" for i in range(dims)]
    # the legend under the plot: beside it, it took a third of a 1024 px screen's column from the points
    legend_below(fig, itemsizing="constant")
    if dims == 3:
        scene_3d(fig, titles)
        fig.update_layout(margin=dict(l=10, r=10, t=70, b=10))
    else:
        set_axes(fig, "x", title=titles[0])
        set_axes(fig, "y", title=titles[1])
    return fig


def small_multiples(matrices: np.ndarray, titles: list[str], title: str, zmin: float | None = None,
                    zmax: float | None = None, names: tuple[str, str] = ("row", "column"), columns: int = 4,
                    max_cells: int = MAX_TILE_CELLS, first: int = 0, summary: tuple[int, str] = (1, "mean"),
                    notes: tuple[str, ...] = ()) -> go.Figure:
    """Square matrices side by side on one colour scale (heads of a layer, heads of a bias,
    frequency bands of a rotary kernel).

    Parameters
    ----------
    matrices : np.ndarray
        [k, n, n]; NaN cells (masked) stay blank.
    titles : list of str
        One title per matrix (lines split by ``<br>``; the rows of tiles leave room for them).
    zmin, zmax : float, optional
        Shared colour range; the data's range where omitted.
    names : (str, str)
        What rows and columns are, for the hover text.
    max_cells : int
        A tile is about 230 pixels high: larger matrices are shown as block means
        (:func:`posviz.analysis.block_mean`) of at most ``max_cells`` per side, said in the title.
    first : int
        Label of row and column 0.
    summary : (int, str)
        ``(b, "mean")`` or ``(b, "max")``: each cell of ``matrices`` already summarises ``b × b`` cells
        (see :func:`token_heatmap`); tiles further reduced take means of those.
    notes : tuple of str
        More of what the reader must know, in the subtitle after the blocks' (colours clipped …).
    """
    matrices, factor = block_mean(matrices, max_cells)
    cell, reduction = summary
    block = cell * factor
    count = matrices.shape[0]
    if cell == 1:
        blocks = (f"means of {factor}×{factor} blocks",) if factor > 1 else ()
    else:
        kind = "maxima" if reduction == "max" else "means"
        blocks = (f"{kind} of {cell}×{cell} blocks" + (f", averaged {factor}×{factor}" if factor > 1 else ""),)
    notes = blocks + tuple(notes)
    fig = go.Figure()
    assign_validated(fig.layout, template=TEMPLATE, **copy.deepcopy(_tiles_layout(tuple(titles), columns, notes)))
    fig.layout.meta = {**fig.layout.meta, "tile_grid": {"titles": list(titles), "columns": columns, "notes": list(notes)}}
    set_title(fig, title)
    row_name, col_name = names
    where = (f"{row_name} %{{y}} → {col_name} %{{x}}" if block == 1
             else f"{plural(row_name)} %{{y}}…, {plural(col_name)} %{{x}}… ({block}×{block} block mean)")
    # Tile i is the subplot of axes x{i + 1} and y{i + 1} (make_subplots numbers them row by row).
    fig.add_traces([dict(type="heatmap", z=_f32(matrices[i]), x0=first, dx=block, y0=first, dy=block,
                         coloraxis="coloraxis", xaxis=f"x{i + 1 if i else ''}", yaxis=f"y{i + 1 if i else ''}",
                         hovertemplate=f"{titles[i]}<br>{where}<br>%{{z:.4f}}<extra></extra>")
                    for i in range(count)])
    finite = matrices[np.isfinite(matrices)]
    fig.layout.coloraxis = dict(colorscale=SEQUENTIAL, cmin=float(finite.min()) if zmin is None else zmin,
                                cmax=float(finite.max()) if zmax is None else zmax)
    return fig


#: The space between two columns of tiles of :func:`small_multiples`, a share of the plot's width.
_TILE_SPACING = 0.02
#: The largest side of a tile of :func:`small_multiples` in the app, pixels: the room left for the
#: tile titles grows with the tiles, and is what three lines of them need at about this size.
TILE_MAX_PX = 220


@functools.lru_cache(maxsize=32)
def _tiles_layout(titles: tuple[str, ...], columns: int, notes: tuple[str, ...]) -> dict:
    """The layout of :func:`small_multiples` with these tile titles, before its title, colours and
    template: the subplots' axes (square tiles, no ticks) and titles, the look, the room for them.

    Kept once per geometry: plotly takes some 50 ms to lay out a dozen subplots; :func:`small_multiples`
    gives a copy of this layout, and the template apart, to a new figure without validating them anew
    (:func:`~posviz.views.style.assign_validated`).
    """
    rows = -(-len(titles) // columns)
    tile, gap, height = _tile_geometry(len(titles), columns, _title_lines(titles))
    # the figure: the plot some 0.8 of its width (the colour bar and the margins beside it), the title
    # above it; no wider than tiles of TILE_MAX_PX need (on a wide screen, rows of titles no taller than they need)
    fig = _subplots(new_figure("", height=None, notes=notes, aspect=_tiles_aspect(height),
                               max_width=round(TILE_MAX_PX / (0.8 * tile))),
                    rows=rows, cols=columns, subplot_titles=list(titles), horizontal_spacing=_TILE_SPACING,
                    vertical_spacing=gap / height)
    axes = {}
    for suffix in [""] + [str(i + 1) for i in range(1, rows * columns)]:  # each y axis keeps its x axis's scale
        # no zero lines: over a tile's blank cells (a causal bias's upper triangle) they drew a grey edge
        axes[f"xaxis{suffix}"] = dict(showticklabels=False, showgrid=False, zeroline=False, constrain="domain")
        axes[f"yaxis{suffix}"] = dict(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed",
                                      scaleanchor=f"x{suffix}", constrain="domain",
                                      constraintoward="top")  # under its title
    fig.update_layout(**axes)
    layout = fig.layout.to_plotly_json()
    del layout["template"]
    return layout


def _title_lines(titles) -> int:
    """Lines of the longest of these tile titles (lines split by ``<br>``)."""
    return max(t.count("<br>") + 1 for t in titles)


def _tile_geometry(count: int, columns: int, lines: int) -> tuple[float, float, float]:
    """The geometry of :func:`small_multiples` of ``count`` tiles in ``columns`` columns whose titles have
    ``lines`` lines, in units of the plot's width: a square tile's side, the room for a row of tile titles
    above it (some 18 % of a 150-250 pixel tile a line, as large as a projector's tile titles, and 20 % of
    margin), and the plot's height."""
    rows = -(-count // columns)
    tile = (1 - (columns - 1) * _TILE_SPACING) / columns
    gap = tile * (0.2 + 0.18 * lines)
    return tile, gap, rows * tile + (rows - 1) * gap


def _tiles_aspect(height: float) -> float:
    """Width ÷ height of the figure of small multiples whose plot is ``height`` (units of its width) high:
    the plot some 0.8 of the figure's width, the title above it."""
    return round(1 / (0.8 * height + 0.1), 3)


def columns_for_area(count: int, lines: int, area: float) -> int:
    """The columns that give ``count`` tiles of small multiples (titles of ``lines`` lines) the largest
    tiles in an area ``area`` wide for its height (width ÷ height: a slide's chart area): the figure as
    large as the area holds, its tiles ``tile`` of its width."""
    def side(columns: int) -> float:
        tile, _, height = _tile_geometry(count, columns, lines)
        return min(area, _tiles_aspect(height)) * tile

    return max(range(1, count + 1), key=side)


def fit_tiles(fig: go.Figure, area: float) -> go.Figure:
    """Small multiples (:func:`small_multiples`) laid out again for an area ``area`` wide for its height
    (width ÷ height: a slide's chart area) in the columns that make their tiles largest there
    (:func:`columns_for_area`): the same tiles, titles, colours and title, the tiles' axes and titles and
    the figure's aspect anew, as a new figure. Any other figure, or tiles already in those columns, is
    returned as it is.

    On a landscape slide the page's columns leave tiles small: twelve heads with three lines of title each
    in three columns were 60 pixels high at 1024 × 768, their titles over the tiles above; in six columns,
    some 115."""
    grid = (fig.layout.meta or {}).get("tile_grid")
    if not grid:
        return fig
    columns = columns_for_area(len(grid["titles"]), _title_lines(grid["titles"]), area)
    if columns == grid["columns"]:
        return fig
    spec = fig.to_plotly_json()
    layout = {name: value for name, value in spec["layout"].items()
              if name != "annotations" and not name.startswith(("xaxis", "yaxis"))}
    tiles = copy.deepcopy(_tiles_layout(tuple(grid["titles"]), columns, tuple(grid["notes"])))
    layout.update({name: value for name, value in tiles.items()
                   if name == "annotations" or name.startswith(("xaxis", "yaxis"))})
    layout["meta"] = {**layout["meta"], "aspect": tiles["meta"]["aspect"], "max_width": tiles["meta"]["max_width"],
                      "tile_grid": {**grid, "columns": columns}}
    return go.Figure(spec["data"], layout)


def _subplots(styled: go.Figure, **grid) -> go.Figure:
    """What ``make_subplots(figure=styled, **grid)`` does to a :func:`~posviz.views.style.new_figure`:
    the subplots' axes and titles added, its look (title, subtitle, fonts, meta) kept, its title
    above the subplots' titles; in place, returned. Traces go to panel ``i`` by :func:`_panel`.

    The axes and titles of each grid are laid out by plotly once (:func:`_grid_layout`: some 20 ms
    for two panels) and given to the figure without validating them anew
    (:func:`~posviz.views.style.assign_validated`).
    """
    layout = _grid_layout(**{name: tuple(v) if isinstance(v, list) else v for name, v in grid.items()})
    assign_validated(styled.layout, **copy.deepcopy(layout))
    if styled.layout.annotations:
        leave_room_for_tile_titles(styled)
    return styled


@functools.lru_cache(maxsize=64)
def _grid_layout(**grid) -> dict:
    """The layout ``make_subplots(**grid)`` makes (lists given as tuples): its axes and the titles of
    its subplots (in a screen's size of tile titles, :data:`~posviz.views.style.TILE_TITLE_FONT`: a
    figure in another look sets them anew), as plotly JSON."""
    fig = make_subplots(**{name: list(v) if isinstance(v, tuple) else v for name, v in grid.items()})
    fig.update_annotations(font_size=TILE_TITLE_FONT)
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)
    return layout


def _panel(i: int) -> dict:
    """The axes of the ``i``-th panel (from 0) of a grid of :func:`_subplots`, row by row, for a
    trace's ``xaxis`` and ``yaxis``: what ``add_trace(…, row, col)`` sets."""
    suffix = str(i + 1) if i else ""
    return dict(xaxis=f"x{suffix}", yaxis=f"y{suffix}")


def heads_grid(patterns: np.ndarray, title: str, zmax: float | None = None,
               summary: tuple[int, str] = (1, "mean"), notes: tuple[str, ...] = ()) -> go.Figure:
    """All attention heads of one layer, [heads, queries, keys] (or their block summaries, see
    :func:`small_multiples`, and its ``notes``), as small multiples from 0 to ``zmax``
    (:func:`tile_columns` columns)."""
    heads = patterns.shape[0]
    return small_multiples(patterns, [f"head {h}" for h in range(heads)], title, zmin=0, zmax=zmax,
                           names=("query", "key"), columns=tile_columns(heads), summary=summary, notes=notes)


def tile_columns(count: int) -> int:
    """Columns of small multiples of ``count`` tiles: about as many as rows, 2 to 4 (4 tiles: 2 × 2, not one
    thin row under a tall colour bar; 12: 4 × 3)."""
    return min(4, max(2, math.ceil(math.sqrt(count))))


def _row_blocks(values: np.ndarray, block: int) -> np.ndarray:
    """[n] → [ceil(n / block)]: the mean of each run of ``block`` rows (as :func:`block_mean` groups them)."""
    values = np.asarray(values, dtype=np.float32)
    if block == 1:
        return values
    padded = np.pad(values, (0, -len(values) % block), constant_values=np.nan)  # a cut block: the rows it has
    return np.nanmean(padded.reshape(-1, block), axis=1)


def token_heatmap(matrix: np.ndarray, tokens: list[str], title: str, colorbar: str,
                  row_title: str = "token", col_title: str = "token", zmin: float | None = None,
                  col_tokens: list[str] | None = None, zmax: float | None = None,
                  hidden: np.ndarray | None = None, threshold: float = 0.0, max_cells: int = MAX_CELLS,
                  summary: tuple[int, str] = (1, "mean"), origin: tuple[int, int] = (0, 0),
                  notes: tuple[str, ...] = ()) -> go.Figure:
    """A token-token matrix with token labels: an attention pattern (query rows, key columns) or
    the similarity of input representations. Square cells; its height follows its width in the app.

    Parameters
    ----------
    matrix : np.ndarray
        [num_tokens, num_tokens], or [num_tokens, len(col_tokens)] when ``col_tokens`` is given.
    tokens : list of str
        Labels of the rows, and of the columns unless ``col_tokens`` is given (thinned so that none
        overlap, :func:`~posviz.views.style.token_ticks`; beyond :data:`MAX_LABELS` tokens the axes
        show indices; hover always names the tokens).
    zmin, zmax : float, optional
        Colour range (for attention: 0 to the layer's largest weight or its 99th percentile, shared with the
        heads grid).
    col_tokens : list of str, optional
        Labels of the columns when they are other tokens than the rows (cross attention:
        target queries against source keys).
    hidden : np.ndarray, optional
        float [num_tokens]: the share of each row's weight on keys left out (special tokens),
        drawn as a grey strip right of the matrix, its value in each cell.
    threshold : float
        With ``hidden``: rows whose kept share ``1 − hidden`` is below it are greyed (not drawn)
        and their label marked "⊘"; the subtitle states the threshold.
    max_cells : int
        Most cells a side sent to the browser: a longer input is shown as the means of
        ``f × f`` blocks (:func:`posviz.analysis.block_mean`, greyed rows left out of them), said in
        the subtitle and on hover, which then names the blocks' first tokens' indices; the
        figure's arrays (downloads) keep every cell.
    summary : (int, str)
        ``(b, "mean")`` or ``(b, "max")``: ``matrix`` already holds one cell per ``b × b`` block of the
        tokens, their mean or maximum (a long input's attention, :class:`posviz.analysis.attention_reading.LayerAttention`);
        said in the subtitle and on hover. (1, "mean"): one cell per token pair.
    origin : (int, int)
        Token index of the first row and column (a window of a longer pattern): axes and hover count
        from there, ``tokens`` and ``col_tokens`` being the window's own.
    notes : tuple of str
        More of what the reader must know, in the subtitle after the blocks' (colours clipped …).
    """
    cols = list(tokens) if col_tokens is None else list(col_tokens)
    z = _f32(matrix)
    greyed = None if hidden is None else (1 - np.asarray(hidden)) < threshold
    if greyed is not None:
        z = z.copy()
        z[greyed] = np.nan
    block, reduction = summary
    if block == 1:
        z, block = block_mean(z, max_cells)
    rows_idx = origin[0] + np.arange(0, len(tokens), block)
    cols_idx = origin[1] + np.arange(0, len(cols), block)
    labelled = block == 1 and len(tokens) <= MAX_LABELS and len(cols) <= MAX_LABELS
    kind = "maxima" if reduction == "max" else "means"
    said, row_labels = [f"{kind} of {block}×{block} blocks"] * (block > 1) + list(notes), list(tokens)
    if hidden is None:
        fig = new_figure(title, height=None, notes=said, aspect=HEATMAP_ASPECT)
    else:
        row_labels = [f"⊘ {t}" if g else t for t, g in zip(tokens, greyed)]
        greyed, shares = _row_blocks(greyed, block) == 1, _row_blocks(hidden, block)  # a block greyed where all is
        said += [f"⊘ grey rows: under {threshold:.0%} of their attention shown, not rescaled"] * bool(greyed.any()) \
            + ["right: share hidden"]
        fig = _subplots(new_figure(title, height=None, notes=said, aspect=HEATMAP_ASPECT + 0.1),
                        rows=1, cols=2, column_widths=[0.9, 0.1], shared_yaxes=True, horizontal_spacing=0.02)
        fig.add_trace(dict(type="heatmap", z=np.where(greyed[:, None], 1.0, np.nan) * np.ones((1, len(cols_idx))),
                           x=cols_idx, y=rows_idx, colorscale=[[0, MISSING], [1, MISSING]], showscale=False,
                           hoverinfo="skip", name="greyed", **_panel(0)))
        fig.add_trace(dict(type="heatmap",
            z=_f32(shares[:, None]), x=[0], y=rows_idx, zmin=0, zmax=1, colorscale="Greys", name="hidden",
            showscale=False, texttemplate="%{z:.0%}" if len(tokens) <= 40 else None,
            customdata=np.array(tokens, dtype=object)[rows_idx, None],
            hovertemplate=f"{row_title} %{{y}} %{{customdata}}<br>hidden: %{{z:.1%}} of its attention"
                          f"{f' (mean of {block} rows)' if block > 1 else ''}<extra></extra>",
            **_panel(1)))
        set_axes(fig, "x", 2, tickvals=[0], ticktext=["hidden"], showgrid=False)
    main = _panel(0) if hidden is not None else {}
    where = (f"{row_title} %{{y}} %{{customdata[0]}} · {col_title} %{{x}} %{{customdata[1]}}" if labelled
             else f"{row_title} %{{y}} · {col_title} %{{x}}" if block == 1
             else f"{plural(row_title)} %{{y}}… · {plural(col_title)} %{{x}}… "
                  f"({block}×{block} block {reduction})")
    fig.add_trace(dict(type="heatmap",
        z=z, x=cols_idx, y=rows_idx, zmin=zmin, zmax=zmax, colorscale=SEQUENTIAL, name=colorbar,
        colorbar=colour_bar(colorbar),
        customdata=np.array([[(a, b) for b in cols] for a in tokens], dtype=object) if labelled else None,
        hovertemplate=where + "<br>%{z:.4f}<extra></extra>", **main,
    ))
    col = 1 if hidden is not None else None
    set_axes(fig, "x", col, title=col_title)
    set_axes(fig, "y", col, title=row_title)
    if labelled:  # beside the hidden strip the square is smaller: fewer labels fit
        most = TICK_LABELS if hidden is None else BESIDE_STRIP_TICK_LABELS
        token_ticks(fig, "x", cols, most, first=origin[1])
        token_ticks(fig, "y", row_labels, most, first=origin[0])
    _square(fig, 1 if hidden is not None else None)
    return fig


def offset_band_figure(panels: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]], title: str,
                       xlabel: str, ylabel: str) -> go.Figure:
    """Proximity against offset with its spread over start positions as a band, one panel per
    named matrix side by side (each with its own y axis: scales of different widths differ).

    Parameters
    ----------
    panels : dict of str to (offsets, mean, low, high)
        As :func:`posviz.properties.proximity_by_offset` returns them: the line is ``mean``, the
        shaded band runs from ``low`` to ``high``.
    """
    fig = _subplots(new_figure(title, height=460), rows=1, cols=len(panels), subplot_titles=list(panels),
                    horizontal_spacing=0.08)
    for i, (name, (offsets, mean, low, high)) in enumerate(panels.items()):
        colour = QUALITATIVE[i % len(QUALITATIVE)]
        x = np.asarray(offsets)
        fig.add_trace(dict(type="scatter", x=x, y=_f32(low), mode="lines", line=dict(width=0, color=colour),
                           name=f"{name}: min over start positions", showlegend=False,
                           hovertemplate="k = %{x}<br>min %{y:.5g}<extra></extra>", **_panel(i)))
        fig.add_trace(dict(type="scatter", x=x, y=_f32(high), mode="lines", line=dict(width=0, color=colour),
                           fill="tonexty", fillcolor="rgba(120,120,120,0.3)",
                           name=f"{name}: min–max over start positions",
                           hovertemplate="k = %{x}<br>max %{y:.5g}<extra></extra>", **_panel(i)))
        fig.add_trace(dict(type="scatter", x=x, y=_f32(mean), mode="lines", line=dict(color=colour, width=2),
                           name=f"{name}: mean", hovertemplate="k = %{x}<br>mean %{y:.5g}<extra></extra>",
                           **_panel(i)))
        set_axes(fig, "x", i + 1, title=xlabel)
    set_axes(fig, "y", 1, title=ylabel)
    legend_below(fig)
    return fig


#: Most tokens :func:`token_bars` draws as bars: two series of bars a token are some 4 pixels wide each at
#: this count in a 1024-pixel window; more, and they became pale slivers (lines instead).
MOST_BARS = 64


def token_bars(series: dict[str, np.ndarray], labels: list[str], title: str, ylabel: str,
               log_y: bool = True) -> go.Figure:
    """Grouped bars, one group per token and one bar per named series (e.g. a per-token difference
    with and without positions), on a log scale by default; beyond :data:`MOST_BARS` tokens, one line per
    series.

    Parameters
    ----------
    series : dict of str to np.ndarray
        Each [num_tokens], non-negative for a log scale.
    labels : list of str
        Token labels; beyond :data:`MAX_LABELS` tokens the axis shows indices (hover still names the token).
    log_y : bool
        Log y axis. An exact 0 has no bar there (a gap in a line); the subtitle says so when one occurs.

    Returns
    -------
    go.Figure
    """
    index = np.arange(len(labels))
    bars = len(labels) <= MOST_BARS
    zeros = log_y and any(np.any(np.asarray(v) == 0) for v in series.values())
    fig = new_figure(title, height=440, notes=[f"{'no bar' if bars else 'gap'}: exactly 0"] * zeros)
    for name, values in series.items():
        values = np.asarray(values, dtype=np.float64)
        shown = np.where(values == 0, np.nan, values) if log_y else values
        fig.add_trace(dict(type="bar" if bars else "scatter", x=index, y=_f32(shown), name=name,
                           customdata=np.array(list(labels), dtype=object),
                           hovertemplate=f"{name}<br>token %{{x}} %{{customdata}}<br>%{{y:.3g}}<extra></extra>",
                           **({} if bars else {"mode": "lines"})))
    if bars:
        fig.update_layout(barmode="group")
    legend_below(fig)
    if log_y:
        log_ticks(fig, [np.asarray(v)[np.asarray(v) > 0] for v in series.values()])
    set_axes(fig, "x", title="token")
    if len(labels) <= MAX_LABELS:
        token_ticks(fig, "x", labels)
    set_axes(fig, "y", title=ylabel)
    return fig


def vector_heatmaps(panels: dict[str, np.ndarray], title: str, row_labels: list[str]) -> go.Figure:
    """Token vectors side by side (tokens × dimensions), one diverging colour scale centred on 0
    for all panels, e.g. a sentence's vectors, its permutation's, and their difference.

    Parameters
    ----------
    panels : dict of str to np.ndarray
        Panel title -> [num_tokens, width], same number of rows.
    row_labels : list of str
        Token labels of the rows (indices beyond :data:`MAX_LABELS` tokens).

    Returns
    -------
    go.Figure
        Colours clipped to the 99.5th percentile of |value| over all panels (said in the subtitle).
    """
    limit = clip_limits(np.abs(np.concatenate([np.ravel(m) for m in panels.values()])), 99.5)[1] or 1.0
    rows = np.arange(len(row_labels))
    fig = _subplots(new_figure(title, height=max(440, min(760, 22 * len(rows) + 240)),
                               notes=["one colour scale, clipped to the 99.5th percentile of |value|"]),
                    rows=1, cols=len(panels), subplot_titles=list(panels), horizontal_spacing=0.03, shared_yaxes=True)
    for i, (name, matrix) in enumerate(panels.items()):
        fig.add_trace(dict(type="heatmap",
            z=_f32(matrix), y=rows, coloraxis="coloraxis", customdata=np.array(
                [[token] * matrix.shape[1] for token in row_labels], dtype=object),
            hovertemplate=f"{name}<br>%{{customdata}} (token %{{y}}) · dimension %{{x}}<br>%{{z:.5g}}<extra></extra>",
            **_panel(i)))
        set_axes(fig, "x", i + 1, title="dimension")
    set_axes(fig, "y", autorange="reversed")
    if len(row_labels) <= MAX_LABELS:
        token_ticks(fig, "y", row_labels)
    fig.layout.coloraxis = dict(colorscale=DIVERGING, cmin=-limit, cmax=limit, colorbar=colour_bar("value"))
    return fig


def probe_predictions_figure(series: dict[str, np.ndarray], title: str, margin: float = 0.25) -> go.Figure:
    """Predicted against true position for the absolute-position probe, one series per matrix.

    Parameters
    ----------
    series : dict of str to np.ndarray
        Name, with its score in a last parenthesis ("… (MAE 0.00)") -> float [n] held-out
        predictions, index p = true position p.
    margin : float
        The y axis shows ``-margin·n .. (1 + margin)·n``; predictions outside are off the chart
        (their count is in the subtitle, and the axis can be zoomed out); hover shows true values.
    """
    n = max(len(v) for v in series.values())
    low, high = -margin * n, (1 + margin) * n
    outside = {name: int(((v < low) | (v > high)).sum()) for name, v in series.items()}
    notes = [f"{name.rsplit(' (', 1)[0]}: {k} of {len(series[name])}" for name, k in outside.items() if k]
    fig = new_figure(title, height=520, notes=["off the chart: " + "; ".join(notes)] if notes else [])
    fig.add_trace(dict(type="scatter", x=[0, n - 1], y=[0, n - 1], mode="lines", name="exact (y = x)",
                       line=dict(color="rgba(60,60,60,0.5)", dash="dot"), hoverinfo="skip"))
    for i, (name, values) in reversed(list(enumerate(series.items()))):
        fig.add_trace(dict(type="scatter",
            x=np.arange(len(values)), y=_f32(values), mode="markers", name=name,
            marker=dict(size=5, color=QUALITATIVE[i % len(QUALITATIVE)], opacity=0.7),
            hovertemplate="position %{x}<br>predicted %{y:.1f}<extra>" + name.rsplit(" (", 1)[0] + "</extra>"))
    set_axes(fig, "x", title="true position")
    set_axes(fig, "y", title="predicted position", range=[low, high])  # held out: the title says so
    # legend below, first series drawn last (on top of the others) and listed first
    legend_below(fig, itemsizing="constant", traceorder="reversed")
    return fig


def layer_probe_figure(mae: np.ndarray, title: str, baseline: float | None = None) -> go.Figure:
    """MAE of the absolute-position probe per layer (0 = embedding output), with the MAE of
    always guessing the middle position as a dashed line."""
    fig = new_figure(title, height=420)
    layers = np.arange(len(mae))
    fig.add_trace(dict(type="scatter", x=layers, y=_f32(mae), mode="lines+markers", name="probe",
                       hovertemplate="layer %{x}<br>MAE %{y:.2f} positions<extra></extra>"))
    if baseline is not None:
        fig.add_hline(y=baseline, line_dash="dash", line_color="#D55E00",
                      annotation_text=f"guessing the middle: {baseline:.1f}", annotation_position="top right")
    set_axes(fig, "x", title="layer (0 = embedding output)", tickvals=layers)
    set_axes(fig, "y", title="MAE (positions)", rangemode="tozero")
    return fig


def ordinal(k: int) -> str:
    """``2`` -> ``"2nd"``, ``11`` -> ``"11th"``, ``23`` -> ``"23rd"``."""
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def plural(name: str) -> str:
    """The plural of an axis name's first word, the rest kept: ``"query"`` -> ``"queries"``,
    ``"key (source)"`` -> ``"keys (source)"``, ``"position"`` -> ``"positions"``.

    >>> plural("query (decoder)"), plural("key"), plural("token")
    ('queries (decoder)', 'keys', 'tokens')
    """
    word, space, rest = name.partition(" ")
    many = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return many + space + rest


def stride_text(step: int) -> str:
    """", every 64th position" for a stride over a long range (empty for step 1), with the warning
    that matters: what oscillates faster than the stride is aliased, not averaged."""
    if step <= 1:
        return ""
    return f", every {ordinal(step)} position (faster oscillations alias)"



def grid_heatmaps(panels: dict[str, np.ndarray], x: np.ndarray, y_labels: list[str], title: str, xlabel: str,
                  ylabel: str, colorbar: str, zmin: float | None = None, zmax: float | None = None,
                  values: dict[str, np.ndarray] | None = None, value_name: str = "value", notes=()) -> go.Figure:
    """Heatmaps side by side on one colour scale, rows named (layer × head grids, layers × offsets).

    Parameters
    ----------
    panels : dict of str to np.ndarray
        Panel title -> [len(y_labels), len(x)], the colour values.
    x : np.ndarray
        Column values (heads, offsets).
    y_labels : list of str
        One distinct label per row, top to bottom ("L0 H3"); plotly leaves out labels that would overlap.
    values : dict of str to np.ndarray, optional
        The numbers hover shows, where the colour is a transform of them (log₁₀ of a weight).
    notes : sequence of str
        Subtitle lines.
    """
    count = len(panels)
    fig = _subplots(new_figure(title, height=max(420, min(820, 16 * len(y_labels) + 260)), notes=list(notes)),
                    rows=1, cols=count, subplot_titles=list(panels) if count > 1 else None, shared_yaxes=True,
                    horizontal_spacing=0.06)
    for i, (name, z) in enumerate(panels.items()):
        fig.add_trace(dict(type="heatmap",  # rows by name (categories); hover's number as a typed array, not a list
            z=_f32(z), x=np.asarray(x), y=list(y_labels), coloraxis="coloraxis", name=name,
            customdata=_f32((values or {}).get(name, z)),
            hovertemplate=f"{name}<br>%{{y}} · {xlabel} %{{x}}<br>{value_name} %{{customdata:.4g}}<extra></extra>",
            **_panel(i)))
        set_axes(fig, "x", i + 1, title=xlabel)
    set_axes(fig, "y", autorange="reversed", type="category")
    set_axes(fig, "y", 1, title=ylabel)
    fig.layout.coloraxis = dict(colorscale=SEQUENTIAL, cmin=zmin, cmax=zmax, colorbar=colour_bar(colorbar))
    return fig


def line_panels(panels: dict[str, tuple[np.ndarray, dict[str, np.ndarray]]], title: str, xlabel: str,
                ylabels: list[str], notes=()) -> go.Figure:
    """Lines in panels side by side, each panel with its own y axis (quantities of different units).

    Parameters
    ----------
    panels : dict of str to (x, series)
        Panel title -> its x values and its named lines (name -> y, same length as x).
    ylabels : list of str
        One y-axis title per panel.
    """
    # a panel's title (13 px) fits in about 1.1 × its share of the figure title's width in characters (18 px)
    chars = round(TITLE_CHARS * 1.1 / len(panels))
    fig = _subplots(new_figure(title, height=440, notes=list(notes)), rows=1, cols=len(panels),
                    subplot_titles=[wrap(name, chars) for name in panels],
                    horizontal_spacing=0.2)  # room for the right panel's y title
    colours = iter(line_colours(sum(len(series) for _, series in panels.values())))
    for i, (x, series) in enumerate(panels.values()):
        for name, y in series.items():
            fig.add_trace(dict(type="scatter", x=np.asarray(x), y=_f32(y), name=name, mode="lines+markers",
                               marker=dict(size=4), line=dict(color=next(colours)), **_panel(i)))
        set_axes(fig, "x", i + 1, title=xlabel)
        set_axes(fig, "y", i + 1, title=ylabels[i])
    legend_below(fig)
    return fig


def layer_strip_figure(rows: list[str], member: np.ndarray, hover: list[list[str]], title: str) -> go.Figure:
    """Which rows (positional components, attention spans) act on which layer: one coloured strip per row.

    Parameters
    ----------
    rows : list of str
        Row names, top first.
    member : np.ndarray
        bool [rows, layers]: True where the row acts on the layer.
    hover : list of list of str
        [rows][layers] text shown on hover.
    title : str
    """
    fig = new_figure(title, height=110 + 46 * len(rows))
    k = len(rows)
    colours = [QUALITATIVE[r % len(QUALITATIVE)] for r in range(k)]
    steps = [[edge, colour] for r, colour in enumerate(colours) for edge in (r / k, (r + 1) / k)]
    codes = np.where(member, np.arange(k)[:, None], np.nan).astype(np.float32)  # row r coloured r where it acts
    fig.add_trace(dict(type="heatmap", z=codes, x=list(range(member.shape[1])), y=list(rows), text=hover,
                       hovertemplate="%{text}<extra></extra>", showscale=False, colorscale=steps,
                       zmin=-0.5, zmax=k - 0.5, xgap=2, ygap=4))
    set_axes(fig, "x", title="layer", dtick=1 if member.shape[1] <= FEW_TICKS else None)
    set_axes(fig, "y", autorange="reversed")
    return fig
