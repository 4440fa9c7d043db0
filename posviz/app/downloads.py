"""Drawing a view: its chart at full width (square heatmaps as squares), a row under it (the view as a
slide, and a menu of its downloads with the figure's sidecar where the page says how it was made), its
caption; in slide mode, the view goes to the slide."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from posviz import comparison_set, export, sidecar
from posviz.app import layout, navigation
from posviz.app.presentation import presenting, styled
from posviz.app.reruns import whole_page_next
from posviz.recipes import Recipe
from posviz.views.style import aspect_of, max_width_of, name_model
from posviz.views.view import View

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from posviz.model_table import ModelTable

_HELP = {"SVG": "Vector image for slides and papers (rendered on the server: a few seconds).",
         "HTML (offline)": "The interactive chart as one file with plotly.js inside: opens without a network.",
         "CSV": "The figure's numbers as a table: a header row, then one line per row with its position or token "
                "first.",
         "NPZ": "Every array of the figure, for numpy.load.",
         "JSON": "The sidecar: the model (every model of a comparison) and its Hub commit, the versions and this "
                 "figure's settings. "
                 "`posviz export --from <this file>` makes the figure again."}


def show(view: View, *, model: str = "", recipe: Recipe | None = None, compared: ModelTable | None = None) -> None:
    """Draw a view: its plotly figure at full width with its own colours (styled for a projector in
    presentation mode; a square heatmap in a container whose height follows its width), the model
    named in its subtitle, a row of small buttons ("Slide": the view full screen; "Download": a menu
    of its files), then its caption. In slide mode (:mod:`posviz.app.slides`) the view goes to the
    slide instead.

    The chart's toolbar (camera) saves a PNG at twice the shown size, rendered by the browser.
    The menu's buttons: "SVG" (rendered on the server by kaleido in a headless Chromium, a few seconds),
    "HTML (offline)" (the interactive chart with plotly.js inside, about 5 MB) and, where the view
    has arrays, "CSV" (a table with a header row and the labels, :func:`posviz.export.csv_table`,
    where the arrays are tabular) and "NPZ" (every array by name). Nothing is built until a button is
    clicked: each button holds a function, not the file. With a ``recipe``, in a page run, "JSON":
    the figure's sidecar (:mod:`posviz.sidecar`: the page's model, the versions, the recipe and
    presentation mode), from which ``posviz export --from`` makes the same figure; with ``compared`` too
    (in a page run or not), the sidecar of a comparison of many models instead
    (:func:`posviz.comparison_set.build_sidecar`: every model of the table, the recipe).

    Parameters
    ----------
    view : View
    model : str
        The short name every file name starts with (``all-MiniLM-L6-v2-…``); empty: the short name of
        the model of this page run (:func:`posviz.app.navigation.current_model`), where there is one.
    recipe : Recipe, optional
        How the page made ``view`` from its model (:func:`posviz.recipes.recipe`): the view's id and
        the page's settings; :func:`posviz.recipes.build` with it gives the same figure. For a view of
        ``compared``, its recipe there (:func:`posviz.comparison_set.recipe_of`).
    compared : ModelTable, optional
        The table of many models ``view`` shows (:func:`posviz.model_table.compare_models`).
    """
    run = navigation.page_run()
    if not model and run is not None:  # a page run: its model
        model = run.lm.short_name
    if run is not None and run.slide is not None:
        run.slide.offer(view)
        return
    fig, config = chart_of(view, model)
    fig = styled(fig)
    layout.chart(fig, config, aspect_of(fig), max_width_of(fig))
    made, present = None, presenting()
    if recipe is not None and compared is not None:
        made = (lambda files: comparison_set.build_sidecar(compared, recipe, stem=view.stem, present=present,
                                                              files=files).dumps())
    elif recipe is not None and run is not None:
        made = (lambda files: sidecar.build(run.lm, recipe, stem=view.stem, present=present, files=files).dumps())
    _download_row(view, fig, model=model, sidecar_text=made)
    if view.caption:
        st.caption(view.caption)


def chart_of(view: View, model: str) -> tuple[go.Figure, dict]:
    """The chart :func:`show` draws for ``view`` outside presentation mode: the figure, with the model
    ``model`` (a short name, or empty) named in its subtitle, and its plotly.js config (the camera
    button's PNG named ``<model>-<view stem>``)."""
    fig = name_model(view.figure, model) if model else view.figure
    return fig, export.plotly_config(export.file_stem(model, view.stem))


def _as_slide(view_id: str) -> None:
    st.query_params["slide"] = view_id
    whole_page_next()  # slide mode is the whole page's, where the chart is in a fragment too


def _download_row(view: View, fig, *, model: str = "", sidecar_text=None) -> None:
    """The row of :func:`show` under ``fig`` (the view's figure as shown): "Slide" where the view has an id,
    and the "Download" menu (:func:`_menu`), whose buttons give files named ``<model>-<view stem>.<ext>``
    (:func:`posviz.export.file_stem`: letters, digits, ``-``, ``.``, ``_``), keyed ``<menu key>-<kind>``;
    ``sidecar_text(file names)``, where given, makes the text of the sidecar, the menu's last button."""
    stem, arrays = view.stem, view.arrays
    name = export.file_stem(model, stem)
    browser = export.find_browser()
    buttons = [("SVG", f"{name}.svg", "image/svg+xml", lambda: export.figure_image(fig, "svg"),
                None if browser else export.BROWSER_FIX, _HELP["SVG"]),
               ("HTML (offline)", f"{name}.html", "text/html", lambda: export.figure_html(fig, name), None,
                _HELP["HTML (offline)"])]
    if arrays:
        if export.has_table(arrays):
            buttons.append(("CSV", f"{name}.csv", "text/csv", lambda: export.csv_table(arrays), None,
                            _HELP["CSV"]))
        buttons.append(("NPZ", f"{name}.npz", "application/octet-stream", lambda: export.npz_bytes(arrays), None,
                        _HELP["NPZ"]))
    if sidecar_text is not None:
        files = [button[1] for button in buttons]
        buttons.append(("JSON", f"{name}.json", "application/json", lambda: sidecar_text(files), None,
                        _HELP["JSON"]))
    row = st.container(horizontal=True, gap="small")
    if view.id:
        row.button("Slide", icon=":material/slideshow:", type="tertiary", on_click=_as_slide, args=(view.id,),
                   key=layout.key(f"slide-{view.id}"), help="This view full screen, for a projector (Esc leaves).")
    menu, prefix = _menu(row, stem, [button[0] for button in buttons])
    if not menu.open:  # its buttons are made only when it is open
        return
    items = menu.container(gap=None)  # rows close together: the whole menu fits under a chart low on the screen
    for label, file_name, mime, data, missing, help_text in buttons:
        items.download_button(label, data, file_name=file_name, mime=mime,
                              key=f"{prefix}-{label.split()[0].lower()}", on_click="ignore", type="tertiary",
                              disabled=missing is not None, help=missing or help_text)


def _menu(row, stem: str, labels: list[str]):
    """The "Download" menu of a row of :func:`_download_row`, and its key: ``download-<stem>``, numbered
    (``-2``, ``-3`` …) where another chart of the run took it.

    A popover whose content runs only while it is open (``on_change="rerun"``: opening it reruns the
    page): a rerun of a page with 8 charts (Attention, 512 tokens) made 38 download buttons, 70 of its 131
    messages, some 65 ms of the server's time and 0.3 s of the browser's, for files that are seldom
    fetched.
    """
    for number in range(1, 100):
        prefix = f"download-{stem}" + (f"-{number}" if number > 1 else "")
        try:
            return row.popover("Download", icon=":material/download:", type="tertiary", key=prefix, on_change="rerun",
                               help=f"{', '.join(labels)}: the files of this chart."), prefix
        except StreamlitDuplicateElementKey:
            continue
    raise StreamlitDuplicateElementKey(f"download-{stem}")
