"""Many models on the Compare page (``against=models``): the list typed, each model's progress, the table.

The model of the sidebar is the table's first row; the others load positions only
(:func:`posviz.model_table.model_keys`), through the process's model store.
"""

from __future__ import annotations

import streamlit as st

from posviz.app import caches
from posviz.model_table import COLUMNS, INTEGER_COLUMNS, ModelTable, Progress, key_name, model_keys
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
    """The table as the page shows it: scores to 4 decimals, right-aligned, and a cell a model does not
    have left empty (its note says why; Streamlit would write "None")."""
    import pandas as pd

    frame = table.frame()
    numbers = [header for name, header in COLUMNS.items() if name not in ("model", "scheme", "note")]
    for name, header in COLUMNS.items():
        if header in numbers:
            form = "{:d}" if name in INTEGER_COLUMNS else "{:.4f}"
            frame[header] = [form.format(value) if pd.notna(value) else "" for value in frame[header]]
    st.dataframe(frame, hide_index=True,
                 column_config={header: st.column_config.TextColumn(alignment="right") for header in numbers})
