"""The standard set of figures and arrays of a model and a sentence, for slides and papers.

Each is a view of :mod:`posviz.views` with the pages' settings (their defaults, or the layer, head,
q, range and presentation mode given), so a figure written here is the figure the app shows.
``python -m posviz export`` (:mod:`posviz.cli`) is its command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go

from posviz.analysis.attention import attention
from posviz.analysis.attention_reading import read_attention
from posviz.analysis.input_representation import input_representation
from posviz.export import csv_table, figure_html, file_stem, has_table, npz_bytes, require_browser, write_images
from posviz.loading import LoadedModel
from posviz.views import attention as attention_views
from posviz.views import attention_offsets as offset_views
from posviz.views import input as input_views
from posviz.views import patch_grid, positions
from posviz.views.figures import ordinal
from posviz.views.limits import PROFILE_Q
from posviz.views.style import for_presentation, name_model
from posviz.views.view import View

#: The sentence exported when none is given (the app's default).
DEFAULT_SENTENCE = "The cat chased the dog"
#: The suffix of figure files (HTML, PNG, SVG) made for a projector (``present=True``).
PRESENT = "present"
#: Figure files: the interactive page first, then the images.
FIGURE_EXTS = (".html", ".png", ".svg")


@dataclass
class Export:
    """One exported view: its figure (HTML, PNG, SVG) and arrays (NPZ, and CSV where tabular).

    Attributes
    ----------
    stem : str
        The view's part of the file names (``"position-similarity"``, ``"profile-q128"``), with the
        settings where they are not the defaults.
    figure : plotly.graph_objects.Figure or None
        None for arrays alone.
    arrays : dict of str to np.ndarray
    model : str
        The model's short name (:attr:`posviz.LoadedModel.short_name`): every file name starts with it.
    present : bool
        The figure is styled for a projector: its files end in ``-present``.
    note : str
        What was used instead of what was asked for (the q of a model with fewer positions), or empty.
    """

    stem: str
    figure: go.Figure | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    model: str = ""
    present: bool = False
    note: str = ""

    @classmethod
    def of(cls, stem: str, view: View, **kwargs) -> "Export":
        """The export of a view under ``stem``, the model named in its figure's subtitle (as the app
        shows it, :func:`posviz.views.style.name_model`); ``kwargs`` set the other attributes."""
        export = cls(stem, view.figure, view.arrays, **kwargs)
        if export.model:
            name_model(export.figure, export.model)
        return export

    @property
    def name(self) -> str:
        """The file name of the arrays without its extension: ``<model>-<stem>`` (:func:`posviz.export.file_stem`)."""
        return file_stem(self.model, self.stem)

    @property
    def figure_name(self) -> str:
        """The file name of the figure without its extension: :attr:`name`, ``-present`` in presentation mode."""
        return file_stem(self.model, self.stem, PRESENT if self.present else "")

    def files(self, out_dir: Path, images: bool = True) -> list[Path]:
        """The files this export writes.

        Parameters
        ----------
        out_dir : Path
        images : bool
            Whether the figure's ``.png`` and ``.svg`` are written beside its ``.html``.

        Returns
        -------
        list of Path
            In ``out_dir``: ``<figure_name>.html`` (``.png``, ``.svg``) for a figure,
            ``<name>.npz`` for arrays and ``<name>.csv`` where they are tabular (:func:`posviz.export.has_table`).
        """
        exts = FIGURE_EXTS[:3 if images else 1] if self.figure is not None else ()
        paths = [out_dir / f"{self.figure_name}{ext}" for ext in exts]
        if self.arrays:
            paths.append(out_dir / f"{self.name}.npz")
            if has_table(self.arrays):
                paths.append(out_dir / f"{self.name}.csv")
        return paths


def check_settings(*, layer: int = 0, head: int = 0, q: int | None = None,
                   range: tuple[int, int] | None = None) -> None:
    """Refuse the settings no model has: negative numbers, a range whose first position is after its last.

    Parameters
    ----------
    layer, head : int
    q : int or None
    range : (int, int) or None

    Raises
    ------
    ValueError
        Naming the setting and what it takes, in one sentence.
    """
    for name, value in (("layer ", layer), ("head ", head), ("q = ", q)):
        if value is not None and value < 0:
            raise ValueError(f"{name}{value} does not exist: {name.strip(' =')} counts from 0.")
    if range is not None:
        first, last = range
        if first < 0 or first > last:
            raise ValueError(f"range {first} {last} is not a range: give FIRST LAST with 0 <= FIRST <= LAST.")


def _profile_q(m, q: int | None, n: int, axis: str, model: str) -> tuple[int, str]:
    """The row "q against all" uses (the nearest computed row) and a note where it is not the one asked for."""
    asked = PROFILE_Q if q is None else q
    used = int(m.positions[np.abs(m.positions - min(asked, n - 1)).argmin()])
    if used == asked:
        return used, ""
    if asked > n - 1:  # only the default can be beyond the last position (a given q is checked)
        return used, f"q = {asked} does not exist: {model} has {n} {axis}s (0 to {n - 1}); used q = {used}."
    return used, (f"q = {asked} is not a computed row (every {ordinal(m.step)} of {n} {axis}s); "
                  f"used q = {used}, the nearest.")


def _position_views(lm: LoadedModel, q: int | None, range: tuple[int, int] | None, **common) -> list[Export]:
    """Position similarity (or the bias of every head), q against all, and the PCA projection."""
    encoding = lm.encodings[0]
    n, axis, model = encoding.num_positions, encoding.axis_label, lm.short_name
    if not (encoding.has_vectors or encoding.has_bias):
        return []
    if q is not None and q > n - 1:
        raise ValueError(f"q = {q} does not exist: {model} has {n} {axis}s (q from 0 to {n - 1}).")
    default = positions.default_range(encoding)
    first, last = default if range is None else range
    if last > n - 1:
        raise ValueError(f"range {first} {last} does not fit: {model} has {n} {axis}s (0 to {n - 1}).")
    full = positions.matrix(encoding, "dot", 0, n - 1)
    used_q, note = _profile_q(full, q, n, axis, model)
    base = "position-bias" if encoding.has_bias else "position-similarity"
    out = [Export.of(base if (first, last) == default else f"{base}-range{first}-{last}",
                     positions.position_similarity(positions.matrix(encoding, "dot", first, last)), **common),
           Export.of(f"profile-q{used_q}", positions.q_profile(full, used_q, head=0 if encoding.has_bias else None),
                     note=note, **common)]
    if encoding.has_vectors:
        coords, rows = positions.projection_coordinates(encoding, "pca", 2)
        boundaries, _ = positions.parse_boundaries(positions.default_boundaries(encoding), n)
        out.append(Export.of("projection-pca", positions.projection(coords, rows, encoding.vector_name, method="pca",
                                                                    boundaries=boundaries), **common))
    return out + _grid_views(lm, **common)


def _grid_views(lm: LoadedModel, **common) -> list[Export]:
    """The grid view of every component whose rows are a grid of patches (a vision tower), and its CLS maps."""
    out = []
    for encoding in (e for e in lm.encodings if e.grid is not None):
        where = f"-{encoding.component.replace(' ', '-')}" if encoding.component else ""
        out.append(Export.of(f"patch-grid{where}", patch_grid.patch_grid(encoding), **common))
        special = patch_grid.special_rows(encoding)
        if special is not None:
            out.append(Export.of(f"patch-grid{where}-special", special, **common))
    return out


def standard_set(lm: LoadedModel, sentence: str = DEFAULT_SENTENCE, *, layer: int = 0, head: int = 0,
                 q: int | None = None, range: tuple[int, int] | None = None,
                 present: bool = False) -> list[Export]:
    """The standard figures and arrays of a model and a sentence, computed but not written.

    Position similarity (P·Pᵀ, the rotary kernel, or the per-head bias) over ``range``, position
    ``q`` against all, the PCA projection of the position vectors, the norms of the input
    representation's parts, the attention of ``layer`` and ``head`` with its token labels, every
    head of ``layer``, and all attention patterns (NPZ only); for a table whose rows are a grid of
    image patches (a vision tower), its grid view (``patch-grid``, ``patch-grid-vision-tower`` for
    CLIP's) and its CLS maps (``…-special``). Views the model's scheme does not have are left out; a
    model that reads no text (ViT: an image) gets its position views only. Each is the view the app's page shows with the same settings (and no second
    sentence); the stems are those of the defaults (``position-similarity``, ``profile-q128``,
    ``projection-pca``, ``input-norms``, ``attention-layer0-head0``, ``attention-layer0-heads``,
    ``attention-all-layers``) with the settings given: ``position-similarity-range0-127``,
    ``profile-q200``, ``attention-layer3-head5``, ``attention-layer3-heads``.

    Parameters
    ----------
    lm : LoadedModel
    sentence : str
        The input and attention figures' sentence.
    layer, head : int
        The attention figures' layer and head (0-based; of the encoder for an encoder-decoder model).
    q : int or None
        The row of "q against all" (0-based); None: 128, or the last position of a model with fewer
        (the export's :attr:`Export.note` then says so), as on the page.
    range : (int, int) or None
        First and last row of the position similarity (inclusive); None: the first 2 048.
    present : bool
        Figures for a projector (:func:`posviz.views.style.for_presentation`, as the app's
        presentation mode); their files end in ``-present``.

    Returns
    -------
    list of Export
        In a stable order, each named by the model's short name (:attr:`Export.model`).

    Raises
    ------
    ValueError
        For an empty sentence, or a layer, head, q or range the model does not have (one sentence
        naming the setting and what the model has).
    """
    if not sentence or not sentence.strip():
        raise ValueError("Give a sentence: the input representation and attention figures need one.")
    check_settings(layer=layer, head=head, q=q, range=range)
    model = lm.short_name
    common = {"model": model, "present": present}
    if not lm.reads_text:  # an image or audio model: its positions only, no sentence to run
        return _presented(_position_views(lm, q, range, **common), present)
    stack = "encoder" if lm.config.is_encoder_decoder else None
    patterns, rows, cols = attention(lm, sentence).stack("encoder")
    layers, heads = patterns.shape[:2]
    if layer >= layers:
        kind = "encoder layers" if stack else "layers"
        raise ValueError(f"layer {layer} does not exist: {model} has {layers} {kind} (0 to {layers - 1}).")
    if head >= heads:
        raise ValueError(f"head {head} does not exist: {model} has {heads} heads per layer (0 to {heads - 1}).")
    out = _position_views(lm, q, range, **common)
    if lm.family.token:
        out.append(Export.of("input-norms", input_views.part_norms(input_representation(lm, sentence)), **common))
    out.append(Export.of(f"attention-layer{layer}-head{head}",
                         attention_views.attention_head(patterns[layer], rows, cols, layer=layer, head=head,
                                                        stack=stack), **common))
    out.append(Export.of(f"attention-layer{layer}-heads",
                         attention_views.attention_grid(patterns[layer], rows, cols, layer=layer, stack=stack),
                         **common))
    profile = read_attention(lm, sentence, layers=[]).offsets  # the encoder's, of an encoder-decoder model
    out.append(Export.of("attention-by-offset", offset_views.offset_grid(profile), **common))
    out.append(Export("attention-all-layers", None, {"attention": patterns, "tokens": rows}, model=model))
    return _presented(out, present)


def _presented(out: list[Export], present: bool) -> list[Export]:
    """The exports, their figures styled for a projector where ``present``."""
    if present:
        for view in out:
            if view.figure is not None:
                for_presentation(view.figure)
    return out


def export_standard_set(lm: LoadedModel, sentence: str, out_dir, progress: Callable | None = None,
                        images: bool = True, *, layer: int = 0, head: int = 0, q: int | None = None,
                        range: tuple[int, int] | None = None,
                        present: bool = False, notes: Callable[[str], None] | None = None) -> list[Path]:
    """Write the standard set (:func:`standard_set`) of ``lm`` and ``sentence`` into ``out_dir``.

    Each figure as ``.html`` (interactive, plotly.js inside: opens offline), ``.png`` (at
    :data:`~posviz.export.PNG_SCALE`) and ``.svg``; each view's arrays as ``.npz`` and, where
    tabular, as ``.csv`` with a header row and the labels (:func:`posviz.export.csv_table`). Every
    file name starts with the model's short name: ``all-MiniLM-L6-v2-position-similarity.csv``.

    Parameters
    ----------
    lm : LoadedModel
    sentence : str
    out_dir : str or Path
        Created where missing; files of the same names are replaced.
    progress : callable, optional
        ``progress(path, done, total)`` after each file written.
    images : bool
        False: HTML and arrays only (no browser needed).
    layer, head, q, range, present
        As for :func:`standard_set`.
    notes : callable, optional
        ``notes(text)`` with each note of the set (:attr:`Export.note`: the q used instead of the
        one asked for), before any file is written.

    Returns
    -------
    list of Path
        The files written, in a stable order.

    Raises
    ------
    ExportError
        PNG/SVG asked for but no browser found (checked before anything is written), or an
        image failed to render.
    ValueError
        For an empty sentence or settings the model does not have (nothing is written).
    """
    out_dir = Path(out_dir)
    if images:
        require_browser()
    views = standard_set(lm, sentence, layer=layer, head=head, q=q, range=range, present=present)
    for view in views:
        if view.note and notes:
            notes(view.note)
    planned = [path for view in views for path in view.files(out_dir, images)]
    total, done = len(planned), 0
    out_dir.mkdir(parents=True, exist_ok=True)

    def wrote(path: Path) -> None:
        nonlocal done
        done += 1
        if progress:
            progress(path, done, total)

    jobs = []
    for view in views:
        for path in view.files(out_dir, images):
            if path.suffix == ".html":
                path.write_text(figure_html(view.figure, view.figure_name), encoding="utf-8")
            elif path.suffix == ".npz":
                path.write_bytes(npz_bytes(view.arrays))
            elif path.suffix == ".csv":
                path.write_text(csv_table(view.arrays), encoding="utf-8", newline="")
            else:
                jobs.append((view.figure, path))
                continue
            wrote(path)
    if jobs:
        write_images(jobs, done=wrote)
    return planned
