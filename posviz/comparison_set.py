"""The files of a comparison of many models (:mod:`posviz.model_table`): its table as CSV and its two figures,
each with a sidecar that names every model of the table as it was loaded (:func:`build_sidecar`),
and the same made again from one of those sidecars (:func:`regenerated`, ``posviz export --from``).

As the standard set of one model (:mod:`posviz.standard_set`), each file is an :class:`~posviz.writing.Export`
with a recipe (:func:`recipe_of`: the view's id, the table's metric and seed, and q) written by
:func:`posviz.writing.write`. ``python -m posviz compare --out`` (:mod:`posviz.cli`) writes them
(:func:`write_model_table`); the Compare page offers each figure's sidecar beside its downloads.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

from posviz import sidecar, writing
from posviz.comparison_recipe import TABLE_STEM, TABLE_VIEW, VIEWS, check_recipe
from posviz.export import require_browser
from posviz.model_table import FILE_PREFIX, ModelTable, Progress, compare_models, figure_views
from posviz.recipes import Recipe, recipe
from posviz.store import ModelKey, ModelStore, key_for
from posviz.writing import Export

def recipe_of(table: ModelTable, view: str, q: int | None = None) -> Recipe:
    """The recipe of one of the comparison's :data:`~posviz.comparison_recipe.VIEWS`: its id, the table's
    metric and seed, and ``q``, the profiles' position (None: the default, :func:`posviz.model_table.profile_q`),
    which the table's and the grid's sidecars keep too, so that the whole comparison comes back from any of
    them (``export --from … --all``).

    Raises
    ------
    ValueError
        For a view not in :data:`~posviz.comparison_recipe.VIEWS` or a negative ``q``
        (:func:`~posviz.comparison_recipe.check_recipe`).
    """
    found = recipe(view, metric=table.metric, seed=table.seed, q=q)
    check_recipe(found)
    return found


def build_sidecar(table: ModelTable, recipe: Recipe, *, stem: str, present: bool = False,
                  files: list[str] = ()) -> sidecar.ComparisonSidecar:
    """The sidecar of the view ``recipe`` of a comparison of many models (:func:`posviz.model_table.compare_models`),
    naming every model of ``table`` as it was loaded (:attr:`posviz.model_table.ModelRow.pinned`), with this
    process's versions (:func:`posviz.sidecar.versions`)."""
    models = [{"id": row.model, "failed": row.note} if row.failed else dict(row.pinned, device=row.device)
              for row in table.rows if not row.reference]
    references = [row.model for row in table.rows if row.reference]
    return sidecar.ComparisonSidecar(recipe, stem, bool(present), models, references, sidecar.versions(), list(files))


def exports(table: ModelTable, q: int | None = None, present: bool = False) -> list[Export]:
    """The table and its figures as the export command writes them (:mod:`posviz.writing`), each with its
    recipe (:func:`recipe_of`), so each gets a sidecar: ``table`` (the CSV,
    :meth:`~posviz.model_table.ModelTable.csv`), then the figures of :func:`~posviz.model_table.figure_views`
    under their stems, as on the page (their tiles and legend name the models).

    Parameters
    ----------
    q : int or None
        As for :func:`~posviz.model_table.figure_views`.
    present : bool
        Figures for a projector (their files end in ``-present``).

    Raises
    ------
    ValueError
        For a ``q`` the models do not share.
    """
    out = [Export(TABLE_STEM, model=FILE_PREFIX, csv=table.csv(), recipe=recipe_of(table, TABLE_VIEW, q))]
    for stem, view in figure_views(table, q).items():
        out.append(Export.of(stem, view, model=FILE_PREFIX, present=present, recipe=recipe_of(table, view.id, q)))
    return out


def write_comparison(table: ModelTable, views: list[Export], out_dir, progress: Callable | None = None,
                     images: bool = True) -> list[Path]:
    """Write exports of ``table`` (:func:`exports`) into ``out_dir`` (:func:`posviz.writing.write`), each one's
    sidecar (:func:`build_sidecar`: every model of the table, the recipe) last among its files.

    Parameters
    ----------
    progress : callable, optional
        ``progress(path, done, total)`` after each file written.

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
    def sidecar_of(view: Export, files: list[str]) -> sidecar.ComparisonSidecar:
        return build_sidecar(table, view.recipe, stem=view.stem, present=view.present, files=files)

    return writing.write(views, out_dir, sidecar_of, progress, images)


def write_model_table(table: ModelTable, out_dir, *, q: int | None = None, images: bool = True,
                      progress: Callable[[Path, int, int], None] | None = None) -> list[Path]:
    """Write the table and its figures into ``out_dir`` (:func:`exports`, :func:`write_comparison`).

    ``models-table.csv`` (:meth:`~posviz.model_table.ModelTable.csv`) and ``models-table.json``, then each figure of
    :func:`~posviz.model_table.figure_views` as the export command writes a view (:class:`posviz.writing.Export`):
    ``models-similarity.html``, ``.png``, ``.svg``, ``.npz`` (a stack of matrices: no CSV) and ``.json``,
    ``models-profiles-q128.html``, ``.png``, ``.svg``, ``.npz``, ``.csv`` and ``.json``. Each ``.json`` is
    the sidecar of its file (:func:`build_sidecar`), from which ``posviz export --from``
    makes the comparison again (:func:`regenerated`).

    Parameters
    ----------
    out_dir : str or Path
        Created where missing; files of the same names are replaced.
    q : int or None
        As for :func:`~posviz.model_table.figure_views`.
    images : bool
        False: no PNG or SVG (they need Chrome or Chromium).
    progress : callable, optional
        ``progress(path, done, total)`` after each file written.

    Returns
    -------
    list of Path
        The files written.

    Raises
    ------
    posviz.export.ExportError
        PNG/SVG asked for but no browser found (before anything is written), or an image failed to render.
    ValueError
        For a ``q`` the models do not share (before anything is written).
    OSError
        A file that cannot be written.
    """
    if images:
        require_browser()
    return write_comparison(table, exports(table, q), out_dir, progress, images)


def regenerated(found: sidecar.ComparisonSidecar, *, device: str = "auto", whole_set: bool = False,
                store: ModelStore | None = None, progress: Callable[[Progress], None] | None = None
                ) -> tuple[ModelTable, list[Export], list[str]]:
    """The comparison a sidecar describes, made again: every model loaded as the sidecar names it
    (:func:`posviz.sidecar.pinned`: a Hub model at its commit, a local folder whose content is unchanged,
    the bundled model), :func:`~posviz.model_table.compare_models` with its metric and seed, then its view, or
    with ``whole_set`` the table and both figures (:func:`exports`).

    Parameters
    ----------
    found : posviz.sidecar.ComparisonSidecar
    device : str
        As for :func:`posviz.load_model`.
    whole_set : bool
        The table and every figure, under their own stems; else the sidecar's view under its stem.
    store, progress
        As for :func:`~posviz.model_table.compare_models`.

    Returns
    -------
    table : ModelTable
    exports : list of Export
        With recipes, named and styled as first written.
    notes : list of str
        What differs from when the sidecar was written and may change the last digits
        (:func:`posviz.sidecar.check_loaded`, :func:`posviz.sidecar.what_differs`), each once.

    Raises
    ------
    posviz.sidecar.SidecarError
        A model that cannot be had as it was: a local folder gone or changed, a Hub commit that cannot be
        had or another one given, a model that loaded then and does not now, or the other way round; the
        references not those of the sidecar. In one sentence.
    ValueError
        A q the models do not share (a hand-edited sidecar), a figure of a table without position vectors.
    RuntimeError
        An unusable ``device``.
    """
    keys = []
    for model in found.models:
        if "failed" in model:
            keys.append(key_for(model["id"], device=device, positions_only=True))
        else:
            name, revision = sidecar.pinned(model)
            keys.append(ModelKey(name, revision, device, bool(model.get("positions_only"))))
    settings = found.recipe.settings
    table = compare_models(keys, store=store, metric=settings["metric"], seed=settings["seed"], progress=progress)
    notes = []
    for model, row in zip(found.models, table.rows):
        if "failed" in model:
            if not row.failed:
                raise sidecar.SidecarError(f"{row.model} loads now but did not when the sidecar was written "
                                           f"({model['failed']}): the table would not be the same.")
        elif row.failed:
            raise sidecar.SidecarError(row.note)
        else:
            notes += sidecar.check_loaded(model, row.pinned)
            notes += sidecar.what_differs(found.versions, model["device"], row.device)
    references = [row.model for row in table.rows if row.reference]
    if references != found.references:
        raise sidecar.SidecarError(f"The references are {', '.join(references) or 'none'}, not the sidecar's "
                                   f"{', '.join(found.references) or 'none'}: the comparison would not be the same.")
    made = exports(table, settings["q"], found.present)
    if not whole_set:
        made = [replace(view, stem=found.stem) for view in made if view.recipe.view == found.recipe.view]
        if not made:
            raise ValueError(f"No model of the comparison has position vectors: it has no {found.recipe.view} figure.")
    return table, made, list(dict.fromkeys(notes))
