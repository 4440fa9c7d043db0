"""The app's startup: what a fresh server does once, before its first visitor asks for it.

``streamlit run app.py`` finds the ``st.App`` of ``app.py`` and serves it with uvicorn; its
:func:`lifespan` runs before the first connection is served and starts :func:`start`: one
background thread that, in this order,

0. waits while a browser loads the page (:func:`posviz.app.gates.before_imports`: until every
   browser connected has had a script run and the server has had no request for a moment, told by
   the middleware :class:`Requests`),
1. imports what the first chart needs (torch, transformers, plotly, posviz's pages' modules),
2. loads the bundled model into the process's model store,
3. stores the model page's first chart of the bundled model on disk, for the first visitor of a
   later fresh server (:mod:`posviz.app.first_paint`), does what a process's first script run of the
   model page does only once (:func:`first_run_once`), looks up the browser that exports charts
   as pictures (:func:`posviz.export.find_browser`, for the pages' download rows), and computes the
   bundled model's default views, the same cached calls the pages make with their defaults
   (:func:`default_views`),
4. imports scikit-learn, SciPy and umap-learn, its numba code compiled or read from numba's disk
   cache (:func:`posviz.analysis.projection.umap_module`), and computes the default projection,
5. moves every object made so far to the garbage collector's permanent generation
   (``gc.freeze()``, also once after step 2): without this each full collection of Python's
   garbage collector walks the millions of objects of torch and transformers (Streamlit's own
   collection after every script run, ``runner.postScriptGC``, is off in ``.streamlit/config.toml``).

From step 3 on, what is left is for later visitors: the thread runs at a lower CPU priority and
starts each step only when no script run is in progress (:func:`posviz.app.gates.visiting`),
unless a run waits for it. The lifespan does not wait for the thread: the server answers at once,
the browser loads the frontend meanwhile, and a script run waits only for what it needs: the gates
of :mod:`posviz.app.gates` (before it imports the pages' modules, and before a computation that
needs scikit-learn, SciPy or umap-learn), then the caches' own locks (``st.cache_data`` and the
model store compute a value once; other callers wait for it). Without ``st.App`` (AppTest) the
first script run starts the warm-up.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import logging
import os
import threading
import time
from typing import Callable

from posviz.app import first_paint, gates

_LOG = logging.getLogger(__name__)
#: What stage 4 imports: scikit-learn and SciPy (probes, properties, PCA) before umap-learn.
LIBRARIES = ("scipy.stats", "sklearn.decomposition", "sklearn.linear_model", "sklearn.model_selection")
_lock = threading.Lock()
_thread: threading.Thread | None = None
#: Seconds from :func:`start` to the end of each stage, by name (for the log and the bench), and
#: when :func:`start` started the thread (``time.time()``; None before).
timings: dict[str, float] = {}
started_at: float | None = None


@contextlib.asynccontextmanager
async def lifespan(app):
    """The ``lifespan`` of ``st.App``: starts the warm-up (:func:`start`) before the server serves
    its first connection, and yields at once (nothing to hand to ``app.state``).

    It also tells Streamlit that the app's pages are its ``st.navigation``'s, not the files of
    ``pages/``: until the process's first ``st.navigation`` call, Streamlit takes a ``pages/`` folder
    beside the entry script for a multipage app of the old kind (``PagesManager.uses_pages_directory``)
    and runs the first visit of a page's URL (``/attention``) as that page's file alone, without
    ``app.py``: on a fresh server some 4 s of imports in the visitor's run, beside the warm-up's,
    Streamlit's list of the files in the sidebar, and no note that the app is starting.
    """
    from streamlit.runtime.pages_manager import PagesManager

    PagesManager.uses_pages_directory = False
    start()
    yield


class Requests:
    """ASGI middleware (for ``st.App(middleware=...)``): tells the warm-up's gates of every HTTP request
    and websocket the server receives (:func:`posviz.app.gates.requested`), so that its imports wait
    until a browser has loaded the page (:func:`posviz.app.gates.before_imports`); passes everything on
    untouched.

    Parameters
    ----------
    app : ASGI application
        The app Streamlit builds.
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] in ("http", "websocket"):
            gates.requested(websocket=scope["type"] == "websocket")
        await self.app(scope, receive, send)


def start() -> None:
    """Start the warm-up thread, once per process (later calls do nothing)."""
    global _thread, started_at
    with _lock:
        if _thread is None:
            started_at = time.time()
            gates.expect()
            _thread = threading.Thread(target=_run, name="posviz-warm-up", daemon=True)
            _thread.start()


def default_views() -> list[tuple[str, Callable[[], object]]]:
    """The bundled model's views as a first visitor of each page sees them: (name, the cached call
    its page makes with the page's defaults), cheapest first. Must import after stage 1."""
    from posviz.app import caches
    from posviz.app.widgets import DEFAULT_TEXT, DEFAULT_TEXT_PAIR
    from posviz.positions.base import METRICS
    from posviz.store import BUNDLED
    from posviz.views import positions

    encoding = caches.loaded_model(BUNDLED).encodings[0]
    component, last = encoding.component, encoding.num_positions - 1

    def attention() -> None:
        queries, _ = caches.attention_size(BUNDLED, DEFAULT_TEXT, DEFAULT_TEXT_PAIR, None, "encoder", None, 0)
        read = (BUNDLED, DEFAULT_TEXT, DEFAULT_TEXT_PAIR, None, "encoder", None, None, None, ())
        caches.attention_reading(*read)
        caches.attention_tops(*read, "mean", False, True)  # the block summary, special tokens shown, clipped
        caches.scheme_prediction(BUNDLED, component, queries)

    return [
        ("similarity", lambda: caches.position_matrix(BUNDLED, component, METRICS[0],
                                                      *positions.default_range(encoding))),
        ("q against all", lambda: caches.position_matrix(BUNDLED, component, METRICS[0], 0, last)),
        ("input representation", lambda: caches.input_parts(BUNDLED, DEFAULT_TEXT, DEFAULT_TEXT_PAIR)),
        ("attention", attention),
    ]


def first_run_once(lm) -> None:
    """Do beforehand what the first script run of a process does and later runs do not, for the model
    page of ``lm`` (the bundled model): Streamlit reads its list of material icons (the navigation's
    icons, :data:`posviz.app.navigation.PAGES`), plotly imports the classes of the first chart's
    traces and layout, and Streamlit's encoder of its JSON (``plotly.io.to_json``, as
    ``st.plotly_chart`` calls it); PIL's ``ImageFile``, which Streamlit imports for the page's icon.
    Nothing is drawn or kept. The plotly part spares a visitor who comes before the default views
    (which build figures too); the rest, every first visitor. Must import after stage 1."""
    import PIL.ImageFile  # noqa: F401
    import plotly.io
    from streamlit.string_util import validate_icon_or_emoji

    from posviz.app.downloads import chart_of
    from posviz.app.navigation import PAGES

    for _path, _title, icon, _url_path in PAGES:
        validate_icon_or_emoji(icon)
    first = first_paint.first_view(lm)
    if first is not None:
        fig, _config = chart_of(first[1], lm.short_name)
        plotly.io.to_json(fig.to_dict(), validate=False)


def default_projection() -> Callable[[], object]:
    """The projection page's cached call with its defaults (UMAP, 2-D, every position)."""
    from posviz.app import caches
    from posviz.store import BUNDLED

    encoding = caches.loaded_model(BUNDLED).encodings[0]
    return lambda: caches.projection(BUNDLED, encoding.component, "umap", 2, 0, encoding.num_positions - 1)


def _yield_to_visitors() -> None:
    """Lower this thread's CPU priority (``nice`` 10, where the system allows it): what is left of the
    warm-up is for later visitors, and must not slow down a first visitor's page, nor their browser
    drawing it on the same machine."""
    with contextlib.suppress(AttributeError, OSError):  # os.setpriority is POSIX; a thread id, Linux's
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


def _stage(name: str, began: float) -> None:
    timings[name] = time.perf_counter() - began
    _LOG.info("warm-up: %s done %.2f s after the start", name, timings[name])


def _run() -> None:
    began = time.perf_counter()
    gates.before_imports()
    _stage("page loaded", began)
    try:
        # First, and apart from any figure drawn meanwhile: the modules plotly takes from sys.modules
        # as it makes any figure's JSON (gates.plotly_lookups). Left to later (scikit-learn imports
        # pandas), they would be half-imported beside a page run.
        with gates.plotly_lookups:
            import pandas  # noqa: F401
            import PIL.Image  # noqa: F401
        import posviz.app.navigation  # noqa: F401  with it every module of the pages
        from posviz.app import caches
        from posviz.store import BUNDLED
    finally:
        gates.imported.set()
    _stage("imports", began)
    try:
        caches.loaded_model(BUNDLED)
        gc.freeze()
        _stage("bundled model", began)
        _yield_to_visitors()
        gates.after_visitors()
        first_paint.store(caches.loaded_model(BUNDLED))
        _stage("first paint", began)
        first_run_once(caches.loaded_model(BUNDLED))
        _stage("first run's one-time work", began)
        from posviz import export

        export.find_browser()  # the download rows' browser lookup (choreographer's import): not in a first visit
        _stage("export browser", began)
        for name, view in default_views():
            gates.after_visitors()
            view()
            _stage(name, began)
    except Exception:  # a failed warm-up is only a slower first visit; the page says what failed
        _LOG.exception("warm-up: the bundled model's first chart or default views failed")
    gates.after_visitors()
    try:
        try:
            for name in LIBRARIES:
                importlib.import_module(name)
            from posviz.analysis.projection import umap_module

            umap_module()
        finally:
            gates.libraries.set()
        _stage("libraries", began)
        default_projection()()
        _stage("projection", began)
    except Exception:  # as above: the page that needs them imports or computes them, and says what failed
        _LOG.exception("warm-up: the libraries or the default projection failed")
    gc.freeze()
