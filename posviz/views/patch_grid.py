"""Views of a vision tower's position table as the grid of patches it is: the similarity maps in their
places (the ViT paper's Figure 7), the CLS row's map apart, and a projection coloured by grid row or column.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from posviz.analysis.patch_grid import map_stride, mosaic, patch_maps, special_maps
from posviz.positions import PositionEncoding
from posviz.views.figures import HEATMAP_ASPECT
from posviz.views.style import MISSING, SEQUENTIAL, colour_bar, legend_below, new_figure, scene_3d, set_axes
from posviz.views.view import View, view_id

#: What the projection's points can be coloured by, for a table whose rows form a grid.
COLOURINGS = ("range", "grid row", "grid column")


def _f32(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _map_ticks(fig: go.Figure, shown: np.ndarray, size: int, axis: str) -> None:
    """Ticks at the centre of each map of a mosaic axis, labelled with the grid row (column) of its patch."""
    centres = np.arange(len(shown)) * (size + 1) + (size - 1) / 2
    set_axes(fig, axis, tickmode="array", tickvals=centres, ticktext=[str(int(s)) for s in shown], showgrid=False,
             zeroline=False)


@view_id("patch-grid")
def patch_grid(encoding: PositionEncoding) -> View:
    """Every patch's cosine similarity to all patches, as a small map at that patch's place in the grid.

    The ViT paper's Figure 7 (Dosovitskiy et al., 2021), in one heatmap: the map of the patch in grid
    row r, column c is the block at (r, c), blank lines between blocks (:func:`posviz.analysis.patch_grid.mosaic`);
    beyond :data:`~posviz.analysis.patch_grid.MAX_MAPS` patches a side, every k-th patch's map. The
    tokens before the patches (CLS, distillation) are no place of the grid: they are left out
    (:func:`special_rows` shows them).

    Parameters
    ----------
    encoding : PositionEncoding
        An encoding with a :attr:`~PositionEncoding.grid`.

    Returns
    -------
    View
        Arrays: ``mosaic`` (as shown, NaN between maps), ``maps`` [rows, cols, rows, cols] (every
        patch's map), ``grid_rows`` and ``grid_columns`` (the patches whose maps are shown).

    Raises
    ------
    ValueError
        For an encoding whose rows form no grid.
    """
    maps = patch_maps(encoding)
    grid = encoding.grid
    step = map_stride(grid.rows, grid.cols)
    tiles = mosaic(maps, step)
    shown_rows, shown_cols = np.arange(0, grid.rows, step), np.arange(0, grid.cols, step)
    title = f"Each patch's similarity map, in its place ({grid.rows} × {grid.cols} grid)"
    notes = ["cosine"] + ([f"every {step}th patch's map"] if step > 1 else [])
    fig = new_figure(title, height=None, notes=notes, aspect=HEATMAP_ASPECT)
    fig.add_trace(dict(type="heatmap", z=_f32(tiles), zmin=float(np.nanmin(tiles)), zmax=1.0, colorscale=SEQUENTIAL,
                       colorbar=colour_bar("cosine"), hoverongaps=False,
                       hovertemplate="cosine %{z:.3f}<extra></extra>"))
    _map_ticks(fig, shown_cols, grid.cols, "x")
    _map_ticks(fig, shown_rows, grid.rows, "y")
    set_axes(fig, "x", title="grid column of the patch", constrain="domain", constraintoward="right")
    set_axes(fig, "y", title="grid row of the patch", autorange="reversed", scaleanchor="x", constrain="domain")
    fig.update_layout(plot_bgcolor="white")
    apart = (f" The {' and '.join(grid.special)} row{'s' if len(grid.special) > 1 else ''} of the table "
             f"(row{'s' if len(grid.special) > 1 else ''} {', '.join(map(str, range(grid.first_patch)))}) "
             f"{'are' if len(grid.special) > 1 else 'is'} no patch and left out of the grid: "
             f"{'their' if len(grid.special) > 1 else 'its'} similarity to the patches is shown apart."
             if grid.special else "")
    caption = (f"The small map at grid row r, column c is the cosine similarity of that patch's position "
               f"embedding (table row {grid.first_patch} + r·{grid.cols} + c) with every patch's, laid out as the "
               "image is; a bright spot marks the patch itself. Nearby patches, and patches of the same row or "
               "column, learn similar embeddings (Dosovitskiy et al., 2021, Figure 7)." + apart)
    return View(fig, title, {"mosaic": tiles, "maps": maps, "grid_rows": shown_rows, "grid_columns": shown_cols},
                caption)


@view_id("patch-grid-special")
def special_rows(encoding: PositionEncoding) -> View | None:
    """The cosine similarity of each token before the patches (CLS, distillation) with every patch, as a
    map of the grid; None where there is none (SigLIP).

    Returns
    -------
    View or None
        Arrays: ``maps`` [k, rows, cols], ``tokens`` (their names).
    """
    grid = encoding.grid
    if not grid.special:
        return None
    maps = special_maps(encoding)
    k = len(grid.special)
    side = np.full((grid.rows, k * (grid.cols + 1) - 1), np.nan, dtype=np.float32)
    for i in range(k):
        side[:, i * (grid.cols + 1):i * (grid.cols + 1) + grid.cols] = maps[i]
    names = " and ".join(grid.special)
    title = f"{names} against each patch"
    fig = new_figure(title, height=380, notes=["cosine"])
    fig.add_trace(dict(type="heatmap", z=_f32(side), colorscale=SEQUENTIAL, colorbar=colour_bar("cosine"),
                       hoverongaps=False, hovertemplate="cosine %{z:.3f}<extra></extra>"))
    centres = np.arange(k) * (grid.cols + 1) + (grid.cols - 1) / 2
    set_axes(fig, "x", tickmode="array", tickvals=centres, ticktext=list(grid.special), showgrid=False,
             zeroline=False, constrain="domain")
    set_axes(fig, "y", title="grid row", autorange="reversed", scaleanchor="x", constrain="domain", showgrid=False)
    fig.update_layout(plot_bgcolor="white")
    caption = (f"The {names} token{'s have' if k > 1 else ' has'} no place in the image, so {'their rows' if k > 1 else 'its row'} "
               f"of the table ({', '.join(map(str, range(k)))}) {'are' if k > 1 else 'is'} kept out of the grid above; "
               f"each map here is the cosine similarity of {'one' if k > 1 else 'its'} position embedding with every "
               "patch's, laid out as the grid.")
    return View(fig, title, {"maps": maps, "tokens": np.array(grid.special)}, caption)


def grid_projection_figure(coords: np.ndarray, positions: np.ndarray, grid, by: str, path: bool, title: str,
                           axis_name: str) -> go.Figure:
    """Scatter of projected table rows (2-D or 3-D), patches coloured by their grid row or column, the
    tokens before the patches (CLS …) apart, in grey.

    Parameters
    ----------
    coords : np.ndarray
        [n, 2] or [n, 3], row i the projection of table row ``positions[i]``.
    positions : np.ndarray
        int [n]: table rows.
    grid : posviz.positions.patches.PatchGrid
    by : {"grid row", "grid column"}
    path : bool
        Also draw the line through consecutive table rows.
    title, axis_name : str
        The figure's title; axes are "<axis_name> 1", "<axis_name> 2" …
    """
    n, dims = coords.shape
    scatter = "scatter3d" if dims == 3 else "scatter"
    axes = dict(zip("xyz", coords.T))
    patch = positions >= grid.first_patch
    cells = np.array([grid.cell(int(p)) for p in positions[patch]], dtype=np.int64).reshape(-1, 2)
    fig = new_figure(title, height=640)
    if path:
        fig.add_trace(dict(type=scatter, **{k: _f32(v) for k, v in axes.items()}, mode="lines", name="path p → p+1",
                           line=dict(color="rgba(60,60,60,0.6)", width=2 if dims == 2 else 4), hoverinfo="skip"))
    colour = cells[:, 0 if by == "grid row" else 1]
    fig.add_trace(dict(
        type=scatter, **{k: _f32(v[patch]) for k, v in axes.items()}, mode="markers", name="patches",
        customdata=np.column_stack([positions[patch], cells]),
        marker=dict(size=4 if dims == 3 else 8, color=colour, colorscale=SEQUENTIAL,
                    colorbar=colour_bar(by), cmin=0, cmax=(grid.rows if by == "grid row" else grid.cols) - 1),
        hovertemplate="row %{customdata[0]} · patch (%{customdata[1]}, %{customdata[2]})<extra></extra>"))
    for row in positions[~patch]:
        i = int(np.flatnonzero(positions == row)[0])
        fig.add_trace(dict(type=scatter, **{k: _f32(v[i:i + 1]) for k, v in axes.items()}, mode="markers",
                           name=f"{grid.special[row]} (row {row})",
                           marker=dict(size=6 if dims == 3 else 12, color=MISSING, symbol="diamond",
                                       line=dict(color="#000000", width=1)),
                           hovertemplate=f"row {row} · {grid.special[row]}<extra></extra>"))
    legend_below(fig)
    titles = [f"{axis_name} {i + 1}" for i in range(dims)]
    if dims == 3:
        scene_3d(fig, titles)
    else:
        set_axes(fig, "x", title=titles[0])
        set_axes(fig, "y", title=titles[1])
    return fig
