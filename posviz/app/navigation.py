"""The app's entry: its pages, the navigation between them, the sidebar, and the last net under every page.

``app.py`` calls :func:`main`; each page script starts with :func:`current_model`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

import streamlit as st

from posviz.app import layout, sidebar, slides
from posviz.app.notices import page_failed, unusable_values
from posviz.app.presentation import presenting
from posviz.app.reruns import whole_page_asked
from posviz.app.widgets import keep_linked_sentences
from posviz.loading import LoadedModel
from posviz.store import ModelKey

#: The pages, in the order of the navigation; paths are relative to ``app.py``.
PAGES = [
    ("pages/model.py", "Model", ":material/info:", ""),
    ("pages/gallery.py", "Gallery", ":material/photo_library:", "gallery"),
    ("pages/similarity.py", "Position similarity", ":material/grid_on:", "similarity"),
    ("pages/projection.py", "Projection", ":material/scatter_plot:", "projection"),
    ("pages/input.py", "Input representation", ":material/functions:", "input"),
    ("pages/attention.py", "Attention", ":material/visibility:", "attention"),
    ("pages/compare.py", "Compare", ":material/compare:", "compare"),
    ("pages/probes.py", "Probes", ":material/science:", "probes"),
    ("pages/word_order.py", "Word order", ":material/swap_horiz:", "word_order"),
    ("pages/properties.py", "Properties", ":material/rule:", "properties"),
]


@dataclass
class PageRun:
    """What :func:`main` set up for the page of one script run.

    Attributes
    ----------
    key : ModelKey
    lm : LoadedModel
        The model the sidebar shows.
    slide : slides.SlideRun or None
        Slide mode, where the URL asks for it: the page's views go to the slide.
    """

    key: ModelKey
    lm: LoadedModel
    slide: slides.SlideRun | None = None


# The PageRun of the script run of this thread; a page run without one was started by Streamlit
# directly (see current_model).
_run = threading.local()


def page_run() -> PageRun | None:
    """The :class:`PageRun` of this script run, or None outside a page (a test, a notebook)."""
    return getattr(_run, "page", None)


def _navigation(position: str = "sidebar"):
    pages = [st.Page(path, title=title, icon=icon, url_path=url_path or None, default=not url_path)
             for path, title, icon, url_path in PAGES]
    return st.navigation(pages, position=position)


def main(before_page: Callable[[], None] | None = None) -> None:
    """Configure the page, draw the navigation and the sidebar, call ``before_page()`` (where given:
    what the app showed while starting makes way, :meth:`posviz.app.first_paint.Starting.make_way`),
    and run the chosen page; an unexpected failure of a page becomes a message
    (:func:`posviz.app.notices.page_failed`).

    Above every page, in one container made on every run: the slide's slot in slide mode, a banner where
    the model asked for could not be shown (the sidebar may be collapsed, as on a projector), and a notice
    for each value of the link that could not be used. What comes and goes there must not move the page:
    Streamlit 1.67's browser side places the elements of a run by their place in the page, and where a
    block holding a widget bound to the URL moves up (an element above it gone), the moved copy is drawn
    before the old one is dropped, and dropping it unregisters the widget's URL binding that the moved
    copy had just registered (both have the same widget id): its changes stop reaching the URL.
    """
    layout.page_config()
    whole_page_asked()  # this run is of the whole page: a callback's request is answered
    linked = {name: st.query_params.get_all(name) for name in st.query_params}  # before any widget runs
    slide = slides.from_url()
    page = _navigation(position="hidden" if slide else "sidebar")
    stem = page.url_path or "model"
    slides.follow(slide)
    layout.style(presenting() and slide is None)  # a slide has its own large sizes
    above = st.container()
    if slide is not None:
        slides.begin(slide, above)
    shown = sidebar.draw()
    if before_page is not None:
        before_page()
    if shown.failure:
        above.warning(f"Showing **{shown.lm.name}** instead of **{shown.asked}**: {shown.failure}",
                      icon=":material/swap_horiz:")
    _run.page = PageRun(shown.key, shown.lm, slide)
    try:
        page.run()
    except Exception as exc:  # the last net: a message and a way forward, never a traceback
        page_failed(exc)
    finally:
        _run.page = None
        with above:  # after the banner
            unusable_values(linked, stem)
        keep_linked_sentences(linked)
        if slide is not None:
            slides.draw(slide, shown.lm.short_name, shown.lm.name, shown.failure)


def page_fragment(body: Callable[[], None]) -> None:
    """Run ``body``, the rest of a page, as a Streamlit fragment (``st.fragment``): a widget drawn in it
    reruns ``body`` alone, not the navigation, the sidebar and the page above it (the Attention page's
    layer slider at 512 tokens: 81 messages instead of 101, about 50 ms less of the server's time).

    A rerun of the fragment alone runs as a part of the page run that drew it: with its
    :class:`PageRun` (:func:`page_run`, :func:`current_model`), its keys numbered on from where that run
    had them (:func:`posviz.app.layout.resume_keys`), and the page's last net (a failure becomes
    :func:`~posviz.app.notices.page_failed`'s message). Whatever changes above ``body`` (a sentence,
    the model) reruns the whole page, ``body`` with it, as does a button of ``body`` whose callback asks
    for it (:func:`posviz.app.reruns.whole_page_next`: a chart's "Slide", "Read the first … tokens").
    Outside a page run, and on a slide (whose views the page run gathers), ``body`` simply runs, in a
    container: a fragment draws into a block of its own, and ``body``'s widgets keep their place in the page
    as slide mode comes and goes (:func:`main` says why that matters).
    """
    run = page_run()
    if run is None or run.slide is not None:
        with st.container():
            body()
        return
    keys = layout.keys_made()

    @st.fragment
    def part() -> None:
        if page_run() is not None:  # drawn by the page run itself
            body()
            return
        if whole_page_asked():  # a callback changed what lies above the fragment
            st.rerun(scope="app")
        _run.page = run
        layout.resume_keys(keys)
        try:
            body()
        except Exception as exc:  # the last net, as main() has it for a whole page
            page_failed(exc)
        finally:
            _run.page = None

    part()


def current_model() -> tuple[ModelKey, LoadedModel]:
    """The model the sidebar shows in this run (:func:`posviz.app.sidebar.draw`): every page starts
    with this call.

    Returns
    -------
    key : ModelKey
        What the caches of :mod:`posviz.app.caches` are keyed by.
    lm : LoadedModel

    Notes
    -----
    Because a ``pages/`` folder sits beside ``app.py``, a fresh server's first request for a page
    (``/similarity``) makes Streamlit run ``pages/similarity.py`` directly, in its legacy multipage
    mode, without ``app.py``. Streamlit offers no setting for it, but its documentation of
    ``st.navigation`` says: "As soon as any session of your app executes the st.navigation command,
    your app will ignore the pages/ directory (across all sessions)". So such a page calls it here
    (its menu hidden) and reruns, which brings it back through ``app.py``, sidebar and all.
    """
    run = page_run()
    if run is None:
        _navigation(position="hidden")
        st.rerun()
    return run.key, run.lm
