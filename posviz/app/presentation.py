"""Presentation mode: large text and thick lines for a projector."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from posviz.views.style import for_presentation

#: Larger text for a projector (Streamlit's theme font size is fixed per server, not per session).
CSS = """<style>
.stMainBlockContainer { font-size: 1.3rem; }
.stMainBlockContainer h1 { font-size: 3.2rem; }
.stMainBlockContainer [data-testid="stCaptionContainer"] { font-size: 1.1rem; color: #222; }
.stMainBlockContainer [data-testid="stWidgetLabel"] p { font-size: 1.15rem; }
</style>"""


def presenting() -> bool:
    """Whether the sidebar's presentation mode is on (``present`` in the URL)."""
    return bool(st.session_state.get("present"))


def styled(fig: go.Figure) -> go.Figure:
    """The figure as this session shows it: for a projector in presentation mode, else unchanged."""
    return for_presentation(fig) if presenting() else fig
