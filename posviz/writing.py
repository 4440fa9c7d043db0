"""An export's files: what one exported view is (:class:`Export`) and the one function that writes the
files of exports (:func:`write`), each figure's JSON sidecar last among its files.

The standard set of a model (:func:`posviz.standard_set.write_exports`) and the comparison of many models
(:func:`posviz.comparison_set.write_comparison`) both write through :func:`write`; they differ only in the
sidecar each figure gets (:mod:`posviz.sidecar`: one model, or every model of the table).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np
import plotly.graph_objects as go

from posviz import sidecar
from posviz.export import csv_table, figure_html, file_stem, has_table, npz_bytes, write_images
from posviz.views.style import for_presentation, name_model
from posviz.views.view import View

if TYPE_CHECKING:
    from posviz.recipes import Recipe

#: The suffix of figure files (HTML, PNG, SVG) made for a projector (``present=True``).
PRESENT = "present"
#: Figure files: the interactive page first, then the images.
FIGURE_EXTS = (".html", ".png", ".svg")


@dataclass
class Export:
    """One exported view: its figure (HTML, PNG, SVG) and arrays (NPZ, and CSV where tabular), or a table
    of its own (CSV), and its sidecar (JSON) where it has a recipe.

    Attributes
    ----------
    stem : str
        The view's part of the file names (``"position-similarity"``, ``"profile-q128"``), with the
        settings where they are not the defaults.
    figure : plotly.graph_objects.Figure or None
        None for arrays alone, or a table.
    arrays : dict of str to np.ndarray
    model : str
        The model's short name (:attr:`posviz.LoadedModel.short_name`), or ``"models"`` for a comparison of
        many: every file name starts with it.
    present : bool
        The figure is styled for a projector: its files end in ``-present``.
    note : str
        What was used instead of what was asked for (the q of a model with fewer positions), or empty.
    recipe : Recipe or None
        What made the figure or table (:mod:`posviz.recipes`; the view and settings of a comparison,
        :func:`posviz.comparison_set.recipe_of`): written to its sidecar; None for arrays alone.
    set : dict or None
        The settings of the standard set it belongs to (:data:`posviz.standard_set.SET_SETTINGS`), for its
        sidecar.
    csv : str
        The text of a table of its own (:meth:`posviz.model_table.ModelTable.csv`), written as
        ``<name>.csv``; empty for a view, whose CSV is its arrays' (:func:`posviz.export.csv_table`).
    """

    stem: str
    figure: go.Figure | None = None
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    model: str = ""
    present: bool = False
    note: str = ""
    recipe: Recipe | None = None
    set: dict | None = None
    csv: str = ""

    @classmethod
    def of(cls, stem: str, view: View, **kwargs) -> "Export":
        """The export of a view under ``stem``, the model named in its figure's subtitle (as the app
        shows it, :func:`posviz.views.style.name_model`) and, where ``present``, the figure styled for a
        projector (:func:`posviz.views.style.for_presentation`, as the app's presentation mode); ``kwargs``
        set the other attributes."""
        export = cls(stem, view.figure, view.arrays, **kwargs)
        if export.model:
            name_model(export.figure, export.model)
        if export.present:
            for_presentation(export.figure)
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
            ``<name>.npz`` for arrays, ``<name>.csv`` where they are tabular (:func:`posviz.export.has_table`)
            or for a table of its own (:attr:`csv`), and ``<figure_name>.json``, the sidecar, where there
            is a :attr:`recipe`.
        """
        exts = FIGURE_EXTS[:3 if images else 1] if self.figure is not None else ()
        paths = [out_dir / f"{self.figure_name}{ext}" for ext in exts]
        if self.arrays:
            paths.append(out_dir / f"{self.name}.npz")
        if self.csv or (self.arrays and has_table(self.arrays)):
            paths.append(out_dir / f"{self.name}.csv")
        if self.recipe is not None:
            paths.append(out_dir / f"{self.figure_name}.json")
        return paths


def write(views: list[Export], out_dir, sidecar_of: Callable[[Export, list[str]], object],
          progress: Callable[[Path, int, int], None] | None = None, images: bool = True, *,
          notes: Callable[[str], None] | None = None) -> list[Path]:
    """Write the files of ``views`` into ``out_dir`` (:meth:`Export.files`): HTML with plotly.js inside
    (:func:`posviz.export.figure_html`), NPZ, CSV, the sidecar, then the PNG and SVG of every figure in one
    headless browser (:func:`posviz.export.write_images`).

    Parameters
    ----------
    views : list of Export
    out_dir : str or Path
        Created where missing; files of the same names are replaced.
    sidecar_of : callable
        ``sidecar_of(view, names)``: the sidecar (:class:`posviz.sidecar.Sidecar` or
        :class:`posviz.sidecar.ComparisonSidecar`) of a view with a recipe, ``names`` the names of the other
        files written with it.
    progress : callable, optional
        ``progress(path, done, total)`` after each file written.
    images : bool
        False: no PNG or SVG (they need Chrome or Chromium).
    notes : callable, optional
        ``notes(text)`` with each view's :attr:`Export.note`, before any file is written.

    Returns
    -------
    list of Path
        The files written, in the order of ``views``.

    Raises
    ------
    posviz.export.ExportError
        PNG/SVG asked for but no browser found, or an image failed to render.
    OSError
        A file that cannot be written.
    """
    out_dir = Path(out_dir)
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
        files = view.files(out_dir, images)
        for path in files:
            if path.suffix == ".html":
                path.write_text(figure_html(view.figure, view.figure_name), encoding="utf-8")
            elif path.suffix == ".npz":
                path.write_bytes(npz_bytes(view.arrays))
            elif path.suffix == ".csv":
                path.write_text(view.csv or csv_table(view.arrays), encoding="utf-8", newline="")
            elif path.suffix == ".json":
                sidecar.write(path, sidecar_of(view, [p.name for p in files if p != path]))
            else:
                jobs.append((view.figure, path))
                continue
            wrote(path)
    if jobs:
        write_images(jobs, done=wrote)
    return planned
