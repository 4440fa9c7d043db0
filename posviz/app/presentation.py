"""Presentation mode: large text and thick lines for a projector (the page itself is scaled by
:func:`posviz.app.layout.style`)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from posviz.views.style import for_presentation

def presenting() -> bool:
    """Whether the sidebar's presentation mode is on (``present`` in the URL)."""
    return bool(st.session_state.get("present"))


def styled(fig: go.Figure) -> go.Figure:
    """The figure as this session shows it: for a projector in presentation mode, else unchanged."""
    return for_presentation(fig) if presenting() else fig
