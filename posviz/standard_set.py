"""The standard set of figures and arrays of a model and a sentence, for slides and papers.

Each is a view of :mod:`posviz.views` with the pages' settings (their defaults, or the layer, head,
q, range and presentation mode given), so a figure written here is the figure the app shows.
Each figure is made by a recipe (:mod:`posviz.recipes`) and written with its sidecar
(:mod:`posviz.sidecar`), from which :func:`regenerated` makes it again.
``python -m posviz export`` (:mod:`posviz.cli`) is its command line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from posviz import sidecar, writing
from posviz.export import require_browser
from posviz.loading import LoadedModel
from posviz.recipes import Recipe, build, encoder_attention, recipe
from posviz.views import patch_grid, positions
from posviz.views.figures import ordinal
from posviz.views.limits import PROFILE_Q
from posviz.writing import Export

#: The sentence exported when none is given (the app's default).
DEFAULT_SENTENCE = "The cat chased the dog"
#: The settings of the standard set (:func:`standard_set`'s keyword arguments and its sentence), as a sidecar's
#: ``set`` holds them.
SET_SETTINGS = ("sentence", "layer", "head", "q", "range", "present")


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


def _made(lm: LoadedModel, stem: str, found: Recipe, **common) -> Export:
    """The export of the view ``found`` makes of ``lm``, under ``stem``."""
    return Export.of(stem, build(lm, found), recipe=found, **common)


def _position_views(lm: LoadedModel, q: int | None, range: tuple[int, int] | None, **common) -> list[Export]:
    """Position similarity (or the bias of every head), q against all, and the PCA projection."""
    encoding = lm.encodings[0]
    n, axis, model, component = encoding.num_positions, encoding.axis_label, lm.short_name, encoding.component
    if not (encoding.has_vectors or encoding.has_bias):
        return []
    if q is not None and q > n - 1:
        raise ValueError(f"q = {q} does not exist: {model} has {n} {axis}s (q from 0 to {n - 1}).")
    default = positions.default_range(encoding)
    first, last = default if range is None else range
    if last > n - 1:
        raise ValueError(f"range {first} {last} does not fit: {model} has {n} {axis}s (0 to {n - 1}).")
    used_q, note = _profile_q(positions.matrix(encoding, "dot", 0, n - 1), q, n, axis, model)
    base = "position-bias" if encoding.has_bias else "position-similarity"
    out = [_made(lm, base if (first, last) == default else f"{base}-range{first}-{last}",
                 recipe("position-similarity", component=component, metric="dot", first=first, last=last), **common),
           _made(lm, f"profile-q{used_q}", recipe("q-profile", component=component, metric="dot", q=used_q,
                                                  head=0 if encoding.has_bias else None), note=note, **common)]
    if encoding.has_vectors:
        boundaries, _ = positions.parse_boundaries(positions.default_boundaries(encoding), n)
        out.append(_made(lm, "projection-pca", recipe("projection", component=component, method="pca", dims=2,
                                                      boundaries=boundaries), **common))
    return out + _grid_views(lm, **common)


def _grid_views(lm: LoadedModel, **common) -> list[Export]:
    """The grid view of every component whose rows are a grid of patches (a vision tower), and its CLS maps."""
    out = []
    for encoding in (e for e in lm.encodings if e.grid is not None):
        where = f"-{encoding.component.replace(' ', '-')}" if encoding.component else ""
        out.append(_made(lm, f"patch-grid{where}", recipe("patch-grid", component=encoding.component), **common))
        if patch_grid.special_rows(encoding) is not None:
            out.append(_made(lm, f"patch-grid{where}-special", recipe("patch-grid-special",
                                                                      component=encoding.component), **common))
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
    common = {"model": model, "present": present,
              "set": {"sentence": sentence, "layer": layer, "head": head, "q": q,
                      "range": list(range) if range else None, "present": present}}
    if not lm.reads_text:  # an image or audio model: its positions only, no sentence to run
        return _position_views(lm, q, range, **common)
    patterns, rows, _, _ = encoder_attention(lm, sentence, layer, head)  # checks the layer and head first
    out = _position_views(lm, q, range, **common)
    if lm.family.token:
        out.append(_made(lm, "input-norms", recipe("input-norms", sentence=sentence), **common))
    out.append(_made(lm, f"attention-layer{layer}-head{head}",
                     recipe("attention-head", sentence=sentence, layer=layer, head=head, clip=True), **common))
    out.append(_made(lm, f"attention-layer{layer}-heads",
                     recipe("attention-grid", sentence=sentence, layer=layer, clip=True), **common))
    out.append(_made(lm, "attention-by-offset", recipe("offset-grid", sentence=sentence), **common))
    out.append(Export("attention-all-layers", None, {"attention": patterns, "tokens": rows}, model=model))
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
    if images:
        require_browser()
    views = standard_set(lm, sentence, layer=layer, head=head, q=q, range=range, present=present)
    return write_exports(lm, views, out_dir, progress, images, notes=notes)


def write_exports(lm: LoadedModel, views: list[Export], out_dir, progress: Callable | None = None,
                  images: bool = True, *, notes: Callable[[str], None] | None = None) -> list[Path]:
    """Write exports of ``lm`` into ``out_dir`` (:func:`posviz.writing.write`): the files
    :meth:`~posviz.writing.Export.files` names, each figure's sidecar (:func:`posviz.sidecar.build`: the
    model, the recipe, the set) last among its files.

    Parameters
    ----------
    lm : LoadedModel
        The model the views show (its sidecars name it).
    views : list of Export
    out_dir, progress, images, notes
        As for :func:`export_standard_set`.

    Returns
    -------
    list of Path
        The files written, in the order of ``views``.

    Raises
    ------
    ExportError
        PNG/SVG asked for but no browser found, or an image failed to render.
    OSError
        A file that cannot be written.
    """
    def sidecar_of(view: Export, files: list[str]) -> sidecar.Sidecar:
        return sidecar.build(lm, view.recipe, stem=view.stem, present=view.present, set=view.set, files=files)

    return writing.write(views, out_dir, sidecar_of, progress, images, notes=notes)


def regenerated(lm: LoadedModel, found: sidecar.Sidecar, *, whole_set: bool = False) -> list[Export]:
    """The exports a sidecar describes, made again from ``lm`` (the model :func:`posviz.sidecar.load_model`
    loaded for it): its figure, or with ``whole_set`` the standard set it belongs to.

    Parameters
    ----------
    lm : LoadedModel
    found : posviz.sidecar.Sidecar
    whole_set : bool
        The whole standard set of the sidecar's ``set`` settings (a sidecar of the export command).

    Returns
    -------
    list of Export
        One, or the set (:func:`standard_set`); named, styled and with recipes as first written.

    Raises
    ------
    ValueError
        ``whole_set`` for a sidecar of no set (a download from the app) or with set settings other than
        :data:`SET_SETTINGS`; settings the model does not have (:func:`posviz.recipes.build`).
    """
    if whole_set:
        settings = found.set
        if settings is None:
            raise ValueError("This sidecar is of one figure downloaded from the app, not of a set: "
                             "leave out --all to make the figure again.")
        if sorted(settings) != sorted(SET_SETTINGS):
            raise ValueError(f"The sidecar's set has the settings {', '.join(sorted(settings))}, "
                             f"not {', '.join(SET_SETTINGS)}.")
        asked = dict(settings, range=tuple(settings["range"]) if settings["range"] else None)
        return standard_set(lm, asked.pop("sentence"), **asked)
    return [Export.of(found.stem, build(lm, found.recipe), model=lm.short_name, present=found.present,
                      recipe=found.recipe, set=found.set)]
