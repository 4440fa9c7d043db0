"""What a script run and the warm-up (:mod:`posviz.app.warmup`) wait for from each other.

A run waits before it imports the pages' modules (:func:`wait_for_imports`: a module imported by
two threads at once can be seen half-initialised) and before a computation that needs
scikit-learn, SciPy or umap-learn (:func:`wait_for_libraries`), until the warm-up has imported
them. The warm-up, once the first visitor's needs are met, starts each of its next steps only
when no run is in progress (:func:`visiting`, :func:`after_visitors`), unless a run waits for it.
Where no warm-up was started (:func:`expect` not called) nothing waits.
"""

from __future__ import annotations

import contextlib
import threading
import time

#: Set by the warm-up once the pages' modules are imported, and once the libraries are.
imported = threading.Event()
libraries = threading.Event()
_lock = threading.Lock()
_expected = False
_visits = 0
_wanted = threading.Event()


def expect() -> None:
    """Say that a warm-up has started: from now on the waits below wait for it."""
    global _expected
    _expected = True


def wait_for_imports(timeout: float | None = None) -> bool:
    """Wait until the warm-up has imported the pages' modules; True once it has (False after
    ``timeout`` seconds). Returns at once where no warm-up was started."""
    return not _expected or imported.wait(timeout)


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
    global _visits
    with _lock:
        _visits += 1
    try:
        yield
    finally:
        with _lock:
            _visits -= 1


def after_visitors() -> None:
    """Wait (in the warm-up's thread) until no script run is in progress, or one waits for the warm-up."""
    while _visits and not _wanted.is_set():
        time.sleep(0.05)
