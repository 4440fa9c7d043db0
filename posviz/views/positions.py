"""Views of a positional encoding: its signature, position similarity, "q against all", its vectors,
the rotary kernel by band, and the projection of its vectors.

Every view asks the encoding what it has (``has_vectors``, ``has_bias``, ``bands``,
``signature()``); none compares scheme names.
"""

from __future__ import annotations

import warnings

import numpy as np

from posviz.analysis.projection import ProjectionFallback, project, projection_method
from posviz.analysis.similarity import PositionMatrix, position_matrix, row_profile, sample_positions
from posviz.families import LayerScheme
from posviz.positions import PositionEncoding
from posviz.views import figures
from posviz.views.patch_grid import grid_projection_figure
from posviz.views.limits import MAX_POSITIONS, PROFILE_Q, max_positions
from posviz.views.view import View, view_id


def matrix(encoding: PositionEncoding, metric: str, first: int, last: int) -> PositionMatrix:
    """The position-position matrix a view shows over rows ``first .. last``, within the views'
    limits (:func:`posviz.views.limits.max_positions`; a stride beyond).

    Raises
    ------
    TypeError
        For an encoding with neither vectors nor a bias.
    """
    return position_matrix(encoding, first, last, metric, max_positions(encoding))


def default_range(encoding: PositionEncoding) -> tuple[int, int]:
    """The rows a position view shows by default: the first :data:`~posviz.views.limits.MAX_POSITIONS`."""
    return 0, min(encoding.num_positions, MAX_POSITIONS) - 1


def default_q(encoding: PositionEncoding) -> int:
    """The default row of "q against all": :data:`~posviz.views.limits.PROFILE_Q` where it exists."""
    return min(PROFILE_Q, encoding.num_positions - 1)


def _range_title(m: PositionMatrix, label: str) -> str:
    first, last = int(m.labels[0]), m.last + m.first_label
    return f"{label}, {m.axis_label}s {first}–{last}{figures.stride_text(m.step)}"


def _scaled(values: np.ndarray) -> np.ndarray:
    """Divided by the largest absolute value; a stack of heads each by its own, so that a head with a
    small ALiBi slope is as visible as one with a large slope."""
    axes = tuple(range(1, values.ndim)) if values.ndim == 3 else None
    return values / np.nanmax(np.abs(values), axis=axes, keepdims=values.ndim == 3)


@view_id("position-similarity")
def position_similarity(m: PositionMatrix, *, normalize: bool = False, clip: bool = True,
                        head: int | None = None) -> View:
    """The position-position matrix as a heatmap, or a bias as one heatmap per head.

    Parameters
    ----------
    m : PositionMatrix
        From :func:`matrix`.
    normalize : bool
        Divide by the largest absolute value (each head by its own).
    clip : bool
        Colours span the 1st to 99th percentile (outliers such as BERT's position 0 otherwise take
        the whole scale); hover shows the true values.
    head : int or None
        For a per-head bias: the head shown; None shows every head side by side.

    Returns
    -------
    View
        Arrays: ``similarity`` or ``bias`` (as shown), ``positions`` (the row labels).
    """
    title = _range_title(m, m.label)
    values = m.values if head is None or not m.per_head else m.values[head]
    values = _scaled(values) if normalize else values
    arrays = {"bias" if m.per_head else "similarity": values, "positions": m.labels}
    if values.ndim == 3:
        title += " (rows = queries, columns = keys)"
        fig = figures.small_multiples(values, [f"head {h}" for h in range(values.shape[0])], title,
                                      names=("query", "key"), columns=figures.tile_columns(values.shape[0]))
        return View(fig, title, arrays)
    if normalize:
        title += " (÷ max)"
    names = ("query", "key") if m.per_head else (m.axis_label, m.axis_label)
    fig = figures.position_heatmap(values, int(m.labels[0]), title, m.label + (" ÷ max" if normalize else ""),
                                   clip=clip, step=m.step, names=names)
    return View(fig, title, arrays)


@view_id("q-profile")
def q_profile(m: PositionMatrix, q: int, *, head: int | None = None) -> View:
    """"Position q against all": row q of a position-position matrix over every row.

    For vector schemes the row is divided by its maximum, ``r(j) = G[q, j] / max_j G[q, j]``
    (the usual figure of position-embedding blog posts); a bias is shown as it is.

    Parameters
    ----------
    m : PositionMatrix
        Over every row of the encoding (``matrix(encoding, metric, 0, n - 1)``).
    q : int
        The row (0-based); with a stride, the nearest shown row is used.
    head : int or None
        The head of a per-head bias (0 where None).

    Returns
    -------
    View
        Arrays: ``profile``, ``positions``.
    """
    values = m.values[head or 0] if m.per_head else m.values
    row = int(np.abs(m.positions - q).argmin())
    q_label = int(m.labels[row])
    relative = not m.per_head
    profile = row_profile(values, row, normalize="max") if relative else values[row]
    title = f"{m.label}, row q = {q_label}" + (" ÷ its max" if relative else "")
    fig = figures.row_profile_figure(profile, q_label, title, m.label + (" ÷ max" if relative else ""), x=m.labels)
    caption = ""
    if relative:
        every = f" (every {figures.ordinal(m.step)})" if m.step > 1 else ""
        caption = f"r(j) = G[q, j] / max_j G[q, j] with G = {m.label} over all {m.rows} {m.axis_label}s{every}."
    return View(fig, title, {"profile": profile, "positions": m.labels}, caption)


@view_id("position-vectors")
def vectors(encoding: PositionEncoding, first: int, last: int) -> View:
    """The position vectors themselves, rows ``first .. last`` (a stride beyond the limit) × dimensions.

    Returns
    -------
    View
        Arrays: ``vectors`` [rows, width], ``positions``.
    """
    rows, step = sample_positions(first, last, MAX_POSITIONS)
    values = encoding.vectors(rows).cpu().numpy()
    axis = encoding.axis_label
    title = f"{axis.capitalize()} vectors {first}–{last}{figures.stride_text(step)} × dimensions"
    fig = figures.vector_heatmap(values, title, axis, first=first + encoding.first_label, step=step)
    offset = getattr(encoding, "offset", 0)
    caption = f"From `{encoding.source}`" + (f", rows {offset}… of the stored table (offset {offset})." if offset
                                             else ".")
    return View(fig, title, {"vectors": values, "positions": rows + encoding.first_label}, caption)


@view_id("kernel-bands")
def kernel_bands(encoding: PositionEncoding, span: int) -> View:
    """The rotary kernel K(m, m + k) against the offset k, over all frequencies and per band.

    Parameters
    ----------
    encoding : posviz.positions.RotaryEncoding
        An encoding with ``bands``.
    span : int
        Offsets 0 .. span (a stride beyond :data:`~posviz.views.limits.MAX_POSITIONS`).

    Returns
    -------
    View
        Arrays: ``kernel`` [1 + bands, offsets] (all frequencies first), ``offsets``.
    """
    offsets, step = sample_positions(0, span, MAX_POSITIONS)
    series = {"all frequencies": encoding.kernel_by_offset(offsets),
              **{name: encoding.kernel_by_offset(offsets, band)
                 for name, band in zip(encoding.band_names, encoding.bands)}}
    title = "K(m, m + k) against the offset k" + (f" (every {figures.ordinal(step)})" if step > 1 else "")
    fig = figures.line_figure(series, title, "offset k", "K", x=offsets)
    return View(fig, title, {"kernel": np.stack(list(series.values())), "offsets": offsets},
                "The kernel depends on the offset only. Fast pairs tell near positions apart and average out "
                "beyond a few positions; slow pairs carry the long-range structure.")


@view_id("signature")
def signature(encoding: PositionEncoding) -> View | None:
    """The figure that characterises a component at a glance (:meth:`PositionEncoding.signature`):
    the length of each learned or sinusoidal position vector, the rotary frequencies, the ALiBi
    slopes, the relative bias by offset. None where the encoding has none (no positions).

    Returns
    -------
    View or None
        Arrays: the values under the signature's ``name`` ([k], or [series, k]), and their x
        (positions, pairs, heads, offsets) under ``x_name``.
    """
    found = encoding.signature()
    if found is None:
        return None
    fig = figures.line_figure(found.series, found.title, found.xlabel, found.ylabel, x=found.x,
                              markers=found.markers, log_y=found.log_y)
    values = np.stack(list(found.series.values()))
    x = np.arange(values.shape[-1]) if found.x is None else found.x
    return View(fig, found.title, {found.name: values[0] if len(values) == 1 else values, found.x_name: x},
                found.caption)


def parse_boundaries(text: str, num_positions: int) -> tuple[list[int], list[str]]:
    """Range boundaries typed as comma-separated 0-based positions ("128", "64, 256").

    Returns
    -------
    boundaries : list of int
        The positions 1 .. num_positions - 1 among them, in the order typed.
    ignored : list of str
        The parts that are not such a position.
    """
    boundaries, ignored = [], []
    for part in text.replace(";", ",").split(","):
        part = part.strip()
        if part.isdigit() and 0 < int(part) < num_positions:
            boundaries.append(int(part))
        elif part:
            ignored.append(part)
    return boundaries, ignored


def default_boundaries(encoding: PositionEncoding) -> str:
    """The default range boundaries of the projection: "128" (BERT's two pre-training phases) where
    the encoding has more rows, else none."""
    return str(PROFILE_Q) if encoding.num_positions > PROFILE_Q else ""


def projection_coordinates(encoding: PositionEncoding, method: str, dims: int, first: int = 0,
                           last: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """UMAP or PCA of the encoding's vectors over rows ``first .. last`` (all by default; at most
    :data:`~posviz.views.limits.MAX_POSITIONS`, every k-th beyond).

    Returns
    -------
    coords : np.ndarray
        float32 [n, dims]; PCA where UMAP cannot embed so few rows
        (:func:`posviz.analysis.projection.projection_method`, which :func:`projection` reports).
    positions : np.ndarray
        int64 [n].

    Raises
    ------
    ValueError
        For fewer rows than ``dims``.
    """
    last = encoding.num_positions - 1 if last is None else last
    positions, _ = sample_positions(first, last, MAX_POSITIONS)
    with warnings.catch_warnings():  # projection() says which method drew it, and why
        warnings.simplefilter("ignore", ProjectionFallback)
        return project(encoding.vectors(positions), method, dims), positions


@view_id("projection")
def projection(coords: np.ndarray, positions: np.ndarray, vector_name: str, *, method: str,
               boundaries: list[int], path: bool = False, grid=None, colour: str = "range") -> View:
    """Scatter of the projected vectors, coloured by position range (or, for a grid of patches, by grid
    row or column), with the path p → p + 1 on request.

    Parameters
    ----------
    coords, positions : np.ndarray
        From :func:`projection_coordinates`.
    vector_name : str
        What the vectors are (``encoding.vector_name``).
    method : {"umap", "pca"}
        The method asked for; where UMAP cannot embed so few positions the caption says PCA was used
        (:func:`posviz.analysis.projection.projection_method`).
    boundaries : list of int
        Positions where a new colour starts.
    path : bool
    grid : posviz.positions.patches.PatchGrid or None
        The grid of patches the rows form (``encoding.grid``), for ``colour`` "grid row" or "grid column".
    colour : {"range", "grid row", "grid column"}
        What the points are coloured by (:data:`posviz.views.patch_grid.COLOURINGS`); "range" where
        ``grid`` is None.

    Returns
    -------
    View
        Arrays: ``coords``, ``positions``.
    """
    method, fallback = projection_method(method, len(positions), coords.shape[1])
    step = int(positions[1] - positions[0]) if len(positions) > 1 else 1
    title = f"{method.upper()} of {len(positions)} {vector_name}{figures.stride_text(step)}"
    axis_name = "UMAP" if method == "umap" else "PC"
    if grid is not None and colour != "range":
        fig = grid_projection_figure(coords, positions, grid, colour, path, title, axis_name)
    else:
        fig = figures.projection_figure(coords, boundaries, path, title, axis_name=axis_name, positions=positions)
    how = ("UMAP (umap-learn, 15 neighbours, seed 0) keeps neighbourhoods, not distances." if method == "umap"
           else "PCA (scikit-learn): the directions of largest variance.")
    coloured = (f" Colour: the patch's {colour} in the {grid.rows} × {grid.cols} grid"
                + (f"; grey diamonds: the {' and '.join(grid.special)} token." if grid.special else ".")
                if grid is not None and colour != "range" else "")
    return View(fig, title, {"coords": coords, "positions": positions},
                (f"{fallback} " if fallback else "") + "Each point is one position's vector; hover to see the "
                "position. " + how + coloured)


@view_id("layer-strip")
def layer_strip(strip: list[LayerScheme]) -> View:
    """The layer strip of a model that mixes positional schemes (or attention spans) layer by layer.

    Parameters
    ----------
    strip : list of LayerScheme
        One per layer (:attr:`posviz.LoadedModel.layer_strip`), not empty.

    Returns
    -------
    View
        One row per positional component and per attention span, coloured where it acts on the
        layer; hover gives the layer's components with their detail (rotary base) and its span. Arrays: ``acts``
        (bool [rows, layers]), ``rows`` (their names), ``layers``.
    """
    components = list(dict.fromkeys(c for s in strip for c in s.components))
    spans = list(dict.fromkeys(s.span for s in strip))
    rows = components + (spans if len(spans) > 1 else [])
    member = np.array([[row in s.components or row == s.span for s in strip] for row in rows])
    described = [f"layer {s.layer}: " + ", ".join(f"{c} ({d})" if d else c for c, d in zip(s.components, s.details))
                 + f" · {s.span}" for s in strip]
    hover = [described] * len(rows)
    title = f"Positional scheme of each layer ({len(strip)} layers)"
    counts = "; ".join(f"{row}: {int(m.sum())}" for row, m in zip(rows, member))
    return View(figures.layer_strip_figure(rows, member, hover, title), title,
                {"acts": member, "rows": np.array(rows), "layers": np.arange(len(strip))},
                f"Layers per row: {counts}. Hover a cell for the rotary base and what the layer's attention sees.")
