"""Runs of the whole page asked for by a widget's callback inside a fragment
(:func:`posviz.app.navigation.page_fragment`), whose own rerun would leave what the callback changed
above it (the tokens read, slide mode) undrawn."""

from __future__ import annotations

import streamlit as st

_WHOLE_PAGE = "posviz-whole-page"


def whole_page_next() -> None:
    """From a widget's callback: the run the click starts is of the whole page, where the widget is in a
    fragment too."""
    st.session_state[_WHOLE_PAGE] = True


def whole_page_asked() -> bool:
    """Whether a callback has asked for the whole page (:func:`whole_page_next`) since this was last
    asked; each request is answered once."""
    return bool(st.session_state.pop(_WHOLE_PAGE, False))
