"""The standard set of figures and arrays of a model and a sentence, for slides and papers.

Each is a view of :mod:`posviz.views` with the pages' default settings, so a figure written here
is the figure the app shows. ``python -m posviz export`` (:mod:`posviz.cli`) is its command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import plotly.graph_objects as go

from posviz.analysis.attention import attention
from posviz.analysis.input_representation import input_representation
from posviz.export import csv_array, csv_text, figure_html, npz_bytes, require_browser, write_images
from posviz.loading import LoadedModel
from posviz.views import attention as attention_views
from posviz.views import input as input_views
from posviz.views import positions
from posviz.views.view import View

#: The sentence exported when none is given (the app's default).
DEFAULT_SENTENCE = "The cat chased the dog"


@dataclass
class Export:
    """One exported view: its figure (HTML, PNG, SVG) and arrays (NPZ; CSV of the first).

    Attributes
    ----------
    stem : str
        The file name without its extension.
    figure : plotly.graph_objects.Figure or None
        None for arrays alone.
    arrays : dict of str to np.ndarray
    """

    stem: str
    figure: go.Figure | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def of(cls, stem: str, view: View) -> "Export":
        """The export of a view under ``stem``."""
        return cls(stem, view.figure, view.arrays)

    def files(self, out_dir: Path, images: bool = True) -> list[Path]:
        """The files this export writes into ``out_dir``: ``.html`` (and ``.png``, ``.svg`` with
        ``images``) for a figure, ``.npz`` and ``.csv`` for arrays."""
        exts = ([".html"] + [".png", ".svg"] * images) if self.figure is not None else []
        exts += [".npz"] * bool(self.arrays) + [".csv"] * bool(self.arrays and csv_array(self.arrays))
        return [out_dir / f"{self.stem}{ext}" for ext in exts]


def _position_views(lm: LoadedModel) -> list[Export]:
    """Position similarity (or the bias of every head), q against all, and the PCA projection."""
    encoding = lm.encodings[0]
    if not (encoding.has_vectors or encoding.has_bias):
        return []
    first, last = positions.default_range(encoding)
    q = positions.default_q(encoding)
    full = positions.matrix(encoding, "dot", 0, encoding.num_positions - 1)
    out = [Export.of("position-bias" if encoding.has_bias else "position-similarity",
                     positions.position_similarity(positions.matrix(encoding, "dot", first, last))),
           Export.of(f"profile-q{q}", positions.q_profile(full, q, head=0 if encoding.has_bias else None))]
    if encoding.has_vectors:
        coords, rows = positions.projection_coordinates(encoding, "pca", 2)
        boundaries, _ = positions.parse_boundaries(positions.default_boundaries(encoding), encoding.num_positions)
        out.append(Export.of("projection-pca", positions.projection(coords, rows, encoding.vector_name, method="pca",
                                                                    boundaries=boundaries)))
    return out


def standard_set(lm: LoadedModel, sentence: str = DEFAULT_SENTENCE) -> list[Export]:
    """The standard figures and arrays of a model and a sentence, computed but not written.

    Position similarity (P·Pᵀ, the rotary kernel, or the per-head bias), position q = 128 against
    all, the PCA projection of the position vectors, the norms of the input representation's
    parts, the attention of layer 0 head 0 with its token labels, every head of layer 0, and all
    attention patterns (NPZ only). Views the model's scheme does not have are left out. Each is
    the view the app's page shows with its default settings.

    Raises
    ------
    ValueError
        For an empty sentence.
    """
    if not sentence or not sentence.strip():
        raise ValueError("Give a sentence: the input representation and attention figures need one.")
    out = _position_views(lm)
    if lm.family.token:
        out.append(Export.of("input-norms", input_views.part_norms(input_representation(lm, sentence))))
    stack = "encoder" if lm.config.is_encoder_decoder else None
    patterns, rows, cols = attention(lm, sentence).stack("encoder")
    out.append(Export.of("attention-layer0-head0",
                         attention_views.attention_head(patterns[0], rows, cols, layer=0, head=0, stack=stack)))
    out.append(Export.of("attention-layer0-heads",
                         attention_views.attention_grid(patterns[0], rows, cols, layer=0, stack=stack)))
    out.append(Export("attention-all-layers", None, {"attention": patterns, "tokens": rows}))
    return out


def export_standard_set(lm: LoadedModel, sentence: str, out_dir, progress: Callable | None = None,
                        images: bool = True) -> list[Path]:
    """Write the standard set (:func:`standard_set`) of ``lm`` and ``sentence`` into ``out_dir``.

    Each figure as ``.html`` (interactive, plotly.js inside: opens offline), ``.png`` (at
    :data:`PNG_SCALE`) and ``.svg``; each view's arrays as ``.npz`` and its first array as
    ``.csv`` (where 1-D or 2-D).

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
        For an empty sentence.
    """
    out_dir = Path(out_dir)
    if images:
        require_browser()
    views = standard_set(lm, sentence)
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
                path.write_text(figure_html(view.figure, view.stem), encoding="utf-8")
            elif path.suffix == ".npz":
                path.write_bytes(npz_bytes(view.arrays))
            elif path.suffix == ".csv":
                path.write_text(csv_text(view.arrays[csv_array(view.arrays)]), encoding="utf-8")
            else:
                jobs.append((view.figure, path))
                continue
            wrote(path)
    if jobs:
        write_images(jobs, done=wrote)
    return planned
