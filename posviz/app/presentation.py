"""Presentation mode: large text and thick lines for a projector (the page itself is scaled by
:func:`posviz.app.layout.style`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from posviz.views.style import for_presentation


def presenting() -> bool:
    """Whether the sidebar's presentation mode is on: its toggle's value, or before the toggle is
    first drawn in this session (the page's style comes first), ``present=true`` in the URL."""
    if "present" in st.session_state:
        return bool(st.session_state["present"])
    return st.query_params.get("present") == "true"


def styled(fig: go.Figure) -> go.Figure:
    """The figure as this session shows it: for a projector in presentation mode (on a copy: a figure
    may be shared by every session, :func:`posviz.app.caches.offset_overview`), else unchanged."""
    return for_presentation(go.Figure(fig)) if presenting() else fig
