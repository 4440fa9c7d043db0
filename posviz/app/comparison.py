"""Many models on the Compare page (``against=models``): the list typed, each model's progress, the table.

The model of the sidebar is the table's first row; the others load positions only
(:func:`posviz.model_table.model_keys`), through the process's model store.
"""

from __future__ import annotations

import streamlit as st

from posviz import settings
from posviz.app import caches
from posviz.app.downloads import show
from posviz.app.widgets import clip_state, url
from posviz.comparison_set import recipe_of
from posviz.model_table import (
    COLUMNS, FILE_PREFIX, INTEGER_COLUMNS, ModelTable, Progress, figure_views, key_name, model_keys, profile_q,
)
from posviz.store import ModelKey

#: The icon of each step of a model (:data:`posviz.model_table.STATES`).
ICONS = {"queued": ":material/schedule:", "loading": ":material/downloading:", "computing": ":material/calculate:",
         "done": ":material/check_circle:", "error": ":material/error:"}


class _Lines:
    """One line per model in a status box, updated as its steps come (:class:`posviz.model_table.Progress`)."""

    def __init__(self, names: list[str]) -> None:
        self.box = st.status(f"Comparing {len(names)} models …", expanded=True)
        self.lines = [self.box.empty() for _ in names]

    def __call__(self, step: Progress) -> None:
        detail = f": {step.detail}" if step.detail else ""
        self.lines[step.index].markdown(f"{ICONS[step.state]} **{step.name}**: {step.state}{detail}")

    def finish(self, table: ModelTable, count: int) -> None:
        """Each model's last line from its row, and the box closed: red where a model failed to load."""
        for index, row in enumerate(table.rows[:count]):
            state = "error" if row.failed else "done"
            self(Progress(index, count, row.model, state, row.note if row.failed else ""))
        failed = len(table.failed)
        label = (f"{count - failed} of {count} models compared; {failed} could not be loaded" if failed
                 else f"{count} models compared")
        self.box.update(label=label, state="error" if failed else "complete", expanded=bool(failed))


def model_table(key: ModelKey, text: str, metric: str, seed: int) -> ModelTable:
    """The table of the sidebar's model and those listed in ``text`` (one a line; the sidebar's model, blank
    lines and repeats left out, :func:`posviz.model_table.model_keys`), each model's progress drawn as it
    loads and computes (:func:`posviz.app.caches.model_table`); the page stops with the way forward for a
    list of more than 8 models (nothing typed is lost: the text area keeps it)."""
    try:
        keys = model_keys(text.splitlines(), device=key.device, first=key)
    except ValueError as exc:
        st.error(f"{exc} The sidebar's model counts as one.", icon=":material/format_list_numbered:")
        st.stop()
    lines = _Lines([key_name(k) for k in keys])
    table = caches.model_table(tuple(keys), metric, seed, progress=lines)
    lines.finish(table, len(keys))
    return table


def show_table(table: ModelTable) -> None:
    """The table as the page shows it: the note (why cells are empty, what was scored) after the scheme,
    scores to 4 decimals, right-aligned, and a cell a model does not have left empty (Streamlit would
    write "None")."""
    import pandas as pd

    frame = table.frame()
    numbers = [header for name, header in COLUMNS.items() if name not in ("model", "scheme", "note")]
    for name, header in COLUMNS.items():
        if header in numbers:
            form = "{:d}" if name in INTEGER_COLUMNS else "{:.4f}"
            frame[header] = [form.format(value) if pd.notna(value) else "" for value in frame[header]]
    order = [COLUMNS["model"], COLUMNS["scheme"], COLUMNS["note"]]  # why a row is empty, where it can be read
    frame = frame[order + [header for header in frame.columns if header not in order]]
    st.dataframe(frame, hide_index=True,
                 column_config={COLUMNS["model"]: st.column_config.TextColumn(pinned=True),  # stays as it scrolls
                                **{header: st.column_config.TextColumn(alignment="right") for header in numbers}})


def many_models(key: ModelKey, column, metric: str, where: str) -> None:
    """The Compare page's models mode: the list of models (a text area in ``column``, bound to ``models``), the
    table (:func:`model_table`, :func:`show_table`) with its CSV, the models' position similarity side by side
    and their "q against all" on one chart, each with its downloads and sidecar. Returns (no ``st.stop``) so
    that slide mode draws the chosen view at the end of the run. ``where``: "Hub id" or "Hub id or local
    folder" (hosted mode)."""
    others = column.text_area(
        f"Other models ({where}s), one per line", **url("models"), height=120,
        placeholder="e.g. gpt2\n" + ("" if settings.hosted() else "./my-model\n") + "Llama 3.1 8B (config only)",
        help="Each is read positions only (its config.json and positional tensors), in parallel; the sinusoid and "
             "a random matrix are added as references. The three \"(config only)\" models of the sidebar's list "
             "work offline.")
    table = model_table(key, others, metric, seed=0)
    show_table(table)
    st.caption(table.caption)
    st.download_button("Table (CSV)", table.csv, file_name=f"{FILE_PREFIX}-table.csv", mime="text/csv",
                       icon=":material/download:", on_click="ignore", type="tertiary",
                       help="The table with a header row; how it was computed in its first, commented line.")
    if not table.matrices:
        st.info("No model here has a vector per position: there is no position similarity to show side by side. "
                "Add a model with learned, sinusoidal or rotary positions.", icon=":material/info:")
        return
    above = st.container()  # the grid, drawn once q is known: its sidecar keeps q, for the whole comparison
    st.subheader("Position q against all, every model")
    n = next(iter(table.matrices.values())).values.shape[0]
    clip_state("q", 0, n - 1)
    q = st.number_input(f"q (0–{n - 1})", 0, n - 1, profile_q(table), **url("q"))
    grid, profiles = figure_views(table, q).values()
    with above:
        show(grid, model=FILE_PREFIX, recipe=recipe_of(table, grid.id, q), compared=table)
        st.caption("One colour scale for all: the 1st to 99th percentile of every matrix together, over the "
                   "positions every model has.")
    show(profiles, model=FILE_PREFIX, recipe=recipe_of(table, profiles.id, q), compared=table)
