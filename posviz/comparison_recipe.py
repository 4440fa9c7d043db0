"""What a comparison of many models (:mod:`posviz.model_table`) is made again from: its views, the settings
of their recipes, and how many models it holds; checked before any model loads, by the comparison itself
(:func:`posviz.comparison_set.recipe_of`) and by the reader of its sidecars (:func:`posviz.sidecar.read`).
"""

from __future__ import annotations

from posviz.positions.base import METRICS
from posviz.recipes import Recipe
from posviz.views import compare

#: Most models one table compares (besides its two references).
MAX_MODELS = 8
#: The id of the table as a view of its own (its CSV, :meth:`~posviz.model_table.ModelTable.csv`), and its
#: file stem.
TABLE_VIEW, TABLE_STEM = "model-table", "table"
#: The views of a comparison, in the order they are written: the table, then its figures
#: (:func:`~posviz.model_table.figure_views`).
VIEWS = (TABLE_VIEW, compare.model_grid.view_id, compare.profiles.view_id)
#: The settings of a comparison's recipe (:func:`posviz.comparison_set.recipe_of`).
RECIPE_SETTINGS = ("metric", "seed", "q")


def check_recipe(found: Recipe) -> None:
    """Refuse a comparison's recipe that no comparison makes, before any model loads.

    Raises
    ------
    ValueError
        For a view not in :data:`VIEWS`, settings other than :data:`RECIPE_SETTINGS`, an unknown metric, a
        seed that is not a whole number or a q that is not a position; in one sentence.
    """
    settings = found.settings
    if found.view not in VIEWS:
        raise ValueError(f"posviz cannot make the comparison view {found.view!r} again; it can make "
                         f"{', '.join(VIEWS)}.")
    if sorted(settings) != sorted(RECIPE_SETTINGS):
        raise ValueError(f"the settings of {found.view} are {', '.join(sorted(settings)) or 'none'}, "
                         f"not {', '.join(RECIPE_SETTINGS)}.")
    if settings["metric"] not in METRICS:
        raise ValueError(f"metric {settings['metric']!r} is not one of {', '.join(METRICS)}.")
    for name in ("seed", "q"):
        value = settings[name]
        if not (value is None and name == "q") and (type(value) is not int or value < 0):
            raise ValueError(f"{name} {value!r} is not a whole number from 0.")
