"""Drawing a view: its chart at full width, a row of download buttons under it, its caption."""

from __future__ import annotations

import streamlit as st
from streamlit.errors import StreamlitDuplicateElementKey

from posviz import export
from posviz.app.presentation import styled
from posviz.views.view import View

_HELP = {"SVG": "Vector image for slides and papers (rendered on the server: a few seconds).",
         "HTML (offline)": "The interactive chart as one file with plotly.js inside: opens without a network.",
         "CSV": "The figure's matrix, one row per line.", "NPZ": "Every array of the figure, for numpy.load."}


def show(view: View) -> None:
    """Draw a view: its plotly figure at full width with its own colours (styled for a projector in
    presentation mode), a row of small download buttons, then its caption.

    The chart's toolbar (camera) saves a PNG at twice the shown size, rendered by the browser.
    The buttons: "SVG" (rendered on the server by kaleido in a headless Chromium, a few seconds),
    "HTML (offline)" (the interactive chart with plotly.js inside, about 5 MB) and, where the view
    has arrays, "CSV" (the first array, where it is 1-D or 2-D) and "NPZ" (every array by name).
    Nothing is built until a button is clicked: each button holds a function, not the file.
    """
    fig = styled(view.figure)
    st.plotly_chart(fig, theme=None, config=export.plotly_config(view.stem))
    _download_row(view)
    if view.caption:
        st.caption(view.caption)


def _download_row(view: View) -> None:
    """The download buttons of :func:`show`, in one row; keys from the file name, numbered where
    two charts of a page share it."""
    fig, stem, arrays = view.figure, view.stem, view.arrays
    browser = export.find_browser()
    buttons = [("SVG", f"{stem}.svg", "image/svg+xml", lambda: export.figure_image(fig, "svg"),
                None if browser else export.BROWSER_FIX),
               ("HTML (offline)", f"{stem}.html", "text/html", lambda: export.figure_html(fig, stem), None)]
    if arrays:
        csv_name = export.csv_array(arrays)
        if csv_name:
            buttons.append(("CSV", f"{stem}-{csv_name}.csv", "text/csv",
                            lambda: export.csv_text(arrays[csv_name]), None))
        buttons.append(("NPZ", f"{stem}.npz", "application/octet-stream", lambda: export.npz_bytes(arrays), None))
    row = st.container(horizontal=True, gap="small")
    for number in range(1, 100):
        prefix = f"download-{stem}" + (f"-{number}" if number > 1 else "")
        try:
            for i, (label, name, mime, data, missing) in enumerate(buttons):
                row.download_button(label, data, file_name=name, mime=mime, key=f"{prefix}-{label.split()[0].lower()}",
                                    on_click="ignore", type="tertiary", icon=":material/download:",
                                    disabled=missing is not None, help=missing or _HELP[label])
            return
        except StreamlitDuplicateElementKey:
            if i:  # the first button of the row took its key: another key cannot clash
                raise
