"""Layouts that hold from 1024 × 768 (a projector) to 1920 × 1080, presentation mode on or off.

Three rules, in one style sheet the entry script adds to every page (:func:`style`):

- a figure whose height follows its width (a square heatmap, small multiples) sits in a container
  of its aspect ratio, so it fills its column and a colour bar matches its height
  (:func:`proportional`);
- two charts side by side (:func:`pair`) stack when the page's main column is too narrow for both
  to be readable: about 1 100 pixels, 1 400 in presentation mode, whatever the window (a column
  left empty then takes no room);
- presentation mode scales the whole page (the root font size: widgets, metrics, captions, tables,
  formulas alike), with narrower side padding to make room, and control rows wrap instead of
  clipping (not on a slide, which has its own large sizes); the sidebar, the lecturer's and not
  the room's, keeps its usual size (CSS ``zoom``) and leaves the page its width.
"""

from __future__ import annotations

import base64
import functools
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import streamlit as st

#: The browser tab's icon.
ICON = Path(__file__).resolve().parents[1] / "data" / "favicon.png"
#: Width of the main column under which side-by-side charts stack, in CSS pixels.
STACK_BELOW, PRESENT_STACK_BELOW = 1100, 1400
#: Percent of the window's height a figure whose height follows its width takes at most, where it is
#: not taller than wide (a square heatmap fits the screen): its width is held to match.
WINDOW_HEIGHT_SHARE = 88
#: Root font size in presentation mode (Streamlit's is 16 px): everything in rem grows with it.
PRESENT_ROOT = 21

_BASE = """
.stMainBlockContainer { container-type: inline-size; container-name: posviz-main; }
[data-testid="stLayoutWrapper"]:has(> [class*="st-key-posviz-aspect"]) { max-height: {share}vh; min-height: 380px; }
.katex-display { overflow-x: auto; overflow-y: hidden; padding-bottom: 2px; }
[data-testid="stMetricLabel"] .stMarkdownEllipsis, [data-testid="stMetricLabel"] .stMarkdownEllipsis p,
[data-testid="stPageLink"] p { white-space: normal; overflow: visible; text-overflow: clip; }
[data-testid="stMetricLabel"] { height: auto; }
@container posviz-main (max-width: {stack}px) {
  [class*="st-key-posviz-pair"] > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"] {
    flex-direction: column; }
  [class*="st-key-posviz-pair"] > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"]
    > [data-testid="stColumn"] { width: 100% !important; flex: 1 1 100% !important; }
  [class*="st-key-posviz-pair"] > [data-testid="stLayoutWrapper"] > [data-testid="stHorizontalBlock"]
    > [data-testid="stColumn"]:not(:has([data-testid="stElementContainer"])) { display: none; }
}
"""
_PRESENT = """
html { font-size: {root}px; }
.stMainBlockContainer { padding-left: 1.5rem; padding-right: 1.5rem; }
[data-testid="stSidebar"][data-collapsed="false"] { zoom: {sidebar}; width: calc(300px / {sidebar}) !important; }
.stMainBlockContainer [data-testid="stCaptionContainer"] { color: #222; }
"""

# Numbers the keyed containers of one script run (the thread's), from 0 at each run: stable keys.
_run = threading.local()


def key(kind: str) -> str:
    """A key for a container or button of this run, unique within it and the same in every run."""
    _run.count = keys_made() + 1
    return f"posviz-{kind}-{_run.count}"


def keys_made() -> int:
    """How many keys :func:`key` has given in this run so far."""
    return getattr(_run, "count", 0)


def resume_keys(count: int) -> None:
    """Number the next keys of this thread's run from ``count``: a fragment's rerun alone gives its
    containers and buttons the keys they had in the page run that drew it."""
    _run.count = count


def style(presenting: bool) -> None:
    """Add the app's layout rules to the page (once per script run, before the page)."""
    _run.count = 0
    css = _BASE.replace("{stack}", str(PRESENT_STACK_BELOW if presenting else STACK_BELOW)).replace(
        "{share}", str(WINDOW_HEIGHT_SHARE))
    if presenting:
        css += _PRESENT.replace("{root}", str(PRESENT_ROOT)).replace("{sidebar}", f"{16 / PRESENT_ROOT:.3f}")
    st.html(f"<style>{css}</style>")


@contextmanager
def proportional(aspect: float, max_width: int | None = None) -> Iterator[None]:
    """A container whose height follows its width (``aspect``: width ÷ height), for one figure drawn
    with ``height="stretch"``: at most :data:`WINDOW_HEIGHT_SHARE` % of the window high where it is
    not taller than wide (a square heatmap fits the screen), and no wider than that height allows (no
    blank band beside it on a wide screen); as high as it needs where it is taller (small multiples,
    whose tiles and their titles would otherwise be squeezed); at most ``max_width`` pixels wide where
    given; on a slide, no wider than the slide's chart area is high allows (a container query on
    that area)."""
    name = key("aspect")
    wrapper = f'[data-testid="stLayoutWrapper"]:has(> .st-key-{name})'
    tall = " max-height: none;" if aspect < 1 else ""  # taller than wide (small multiples): the page scrolls
    # as wide as its height allows (a full-width square on a wide screen: no blank band beside the plot)
    widths = [f"{WINDOW_HEIGHT_SHARE}vh * {aspect}"] if aspect >= 1 else []
    widths += [f"{max_width}px"] if max_width else []
    capped = f" max-width: min({', '.join(widths)});" if widths else ""
    st.html(f"<style>{wrapper} {{ aspect-ratio: {aspect};{tall}{capped} }} "  # on a slide: as wide as its height allows
            f".st-key-posviz-slide-charts {wrapper} {{ width: min(100%, calc(100cqh * {aspect})); }}</style>")
    with st.container(key=name):
        yield


@functools.cache
def icon_url() -> str:
    """:data:`ICON` as a ``data:`` URL. Streamlit hands a URL to the browser as it is; a file it reads,
    checks with PIL and registers as a media file again in every script run."""
    return "data:image/png;base64," + base64.b64encode(ICON.read_bytes()).decode("ascii")


def page_config() -> None:
    """The page's title and icon in the browser tab (:func:`icon_url`), and the wide layout: first in
    every script run."""
    st.set_page_config(page_title="posviz · position embeddings", page_icon=icon_url(), layout="wide")


def chart(fig, config: dict, aspect: float | None, max_width: int | None = None) -> None:
    """Draw a plotly chart at full width with its own colours: ``fig`` a figure or its JSON as a dict,
    ``config`` its plotly.js config, ``aspect`` (width ÷ height) where its height follows its width
    (in a :func:`proportional` container, at most ``max_width`` pixels wide), else None (the
    figure's own height)."""
    if aspect:
        with proportional(aspect, max_width):
            st.plotly_chart(fig, theme=None, config=config, height="stretch")
    else:
        st.plotly_chart(fig, theme=None, config=config)


def pair(spec=2, gap: str = "large") -> list:
    """Columns side by side that stack when the main column is narrow (see the module's rules); the
    arguments are :func:`streamlit.columns`'."""
    with st.container(key=key("pair")):
        return st.columns(spec, gap=gap)
