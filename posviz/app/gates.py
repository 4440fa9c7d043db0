"""What a script run and the warm-up (:mod:`posviz.app.warmup`) wait for from each other.

A run waits before it imports the pages' modules (:func:`wait_for_imports`: a module imported by
two threads at once can be seen half-initialised) and before a computation that needs
scikit-learn, SciPy or umap-learn (:func:`wait_for_libraries`), until the warm-up has imported
them. The warm-up begins its imports once every browser that has connected has had a script run
and the server has been quiet for a moment (:func:`before_imports`): not while a browser loads the
page, nor before its first run has drawn. Once the first visitor's needs are met, the warm-up starts
each of its next steps only when no run is in progress (:func:`visiting`, :func:`after_visitors`),
unless a run waits for it.
Where no warm-up was started (:func:`expect` not called) nothing waits.
"""

from __future__ import annotations

import contextlib
import threading
import time

#: Set by the warm-up once the pages' modules are imported, and once the libraries are.
imported = threading.Event()
libraries = threading.Event()
#: Held by the warm-up while it imports the modules plotly looks up in ``sys.modules`` whenever it
#: makes a figure's JSON (pandas, ``PIL.Image``), and by a run that draws a chart before the warm-up's
#: imports are done (:func:`posviz.app.first_paint.draw`): plotly takes a module half-imported by the
#: other thread as it is, and the chart fails (``partially initialized module 'pandas' has no attribute
#: 'Series'``, a first visit during the imports of a fresh server).
plotly_lookups = threading.Lock()
_lock = threading.Lock()
_expected = False
_visits = 0
_wanted = threading.Event()
_last_request = 0.0
_connections = 0
_runs = 0
#: Seconds without a request to the server (:func:`requested`) after which the warm-up begins its
#: imports: a browser loading the frontend asks for its files in a chain, a few tenths of a second
#: apart at most (2 cores, a restart of the server), and for the code of the elements a run draws.
QUIET_S = 0.4
#: Seconds after :func:`before_imports` began waiting when the imports begin whatever the server serves.
MOST_S = 10.0


def expect() -> None:
    """Say that a warm-up has started: from now on the waits below wait for it."""
    global _expected
    _expected = True


def wait_for_imports(timeout: float | None = None) -> bool:
    """Wait until the warm-up has imported the pages' modules; True once it has (False after
    ``timeout`` seconds). Returns at once where no warm-up was started."""
    return not _expected or imported.wait(timeout)


def requested(websocket: bool = False) -> None:
    """Say that the server has received an HTTP request, or opened a websocket (``websocket``: a browser
    that will ask for a script run), as the app's middleware sees them (:class:`posviz.app.warmup.Requests`)."""
    global _last_request, _connections
    with _lock:
        _last_request = time.monotonic()
        _connections += websocket


def before_imports() -> None:
    """Wait (in the warm-up's thread, before its imports) until every websocket opened so far has had
    a script run begin (:func:`visiting`) and the server has received no request for :data:`QUIET_S`;
    or until :data:`MOST_S` have passed.

    Importing torch and transformers holds Python's GIL for up to a quarter of a second at a time,
    and the server's thread that serves the frontend's files, reads the websockets and sends what a
    run draws waits for it. Begun while a first visitor's browser loaded the page, the imports delayed
    its first chart (the stored one) by about 0.8 s (a restart on 2 cores, measured in
    docs/performance.md); begun before the browser's first run, that run started only once they were
    done (some 4 s: a visit of the Attention page saw Streamlit's list of files, not the note that the
    app is starting). Begun once the run has drawn and the browser has fetched what that needs, neither.
    """
    began = time.monotonic()
    while True:
        now = time.monotonic()
        with _lock:
            waiting = _runs < _connections
            quiet = now - max(began, _last_request) >= QUIET_S
        if (quiet and not waiting) or now - began >= MOST_S:
            return
        time.sleep(0.05)


def wait_for_libraries(timeout: float | None = None) -> bool:
    """Wait until the warm-up has imported scikit-learn, SciPy and umap-learn (see
    :func:`wait_for_imports`); the warm-up no longer gives way to script runs from then on."""
    if not _expected or libraries.is_set():
        return True
    _wanted.set()
    return libraries.wait(timeout)


@contextlib.contextmanager
def visiting():
    """Around a script run (``app.py``): while one is in progress, the warm-up does not start its
    next step for later visitors."""
    global _visits, _runs
    with _lock:
        _visits += 1
        _runs += 1
    try:
        yield
    finally:
        with _lock:
            _visits -= 1


def after_visitors() -> None:
    """Wait (in the warm-up's thread) until no script run is in progress, or one waits for the warm-up."""
    while _visits and not _wanted.is_set():
        time.sleep(0.05)
