"""The app's startup (posviz.app.warmup): what the warm-up computes is what a first visitor of each
page would otherwise compute, and the app's entry is an st.App that ``streamlit run`` serves."""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import os
import subprocess
import sys
import threading
import time

import pytest
from streamlit.testing.v1 import AppTest

from posviz.app import caches
from posviz.views import attention as attention_views
from posviz.views import positions
from tests.support.apptest import APP, ROOT, TIMEOUT, apptest_like_browser, assert_clean, open_page  # noqa: F401


def _warm() -> None:
    """The warm-up's steps 3 and 4 as one script (AppTest runs it in the app's caches)."""
    from posviz.app import warmup

    for _, view in warmup.default_views():
        view()
    warmup.default_projection()()


def test_first_visits_after_the_warm_up_compute_nothing(monkeypatch):
    AppTest.from_function(_warm, default_timeout=TIMEOUT).run()
    calls = []

    def counting(module, name):
        original = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, **k: calls.append(name) or original(*a, **k))

    for module, name in ((caches, "read_attention"), (caches, "input_representation"), (positions, "matrix"),
                         (positions, "projection_coordinates"), (attention_views, "layer_tops")):
        counting(module, name)
    for page in ("similarity", "input", "attention", "projection"):
        assert_clean(open_page(page), page)
    assert calls == [], f"the first visits computed {calls}: the warm-up's defaults are not the pages'"


#: In a fresh process: the whole warm-up (its thread joined: nothing it imports can land in the run's
#: count), then the app's first script run (the model page); prints the modules that run imported.
_FIRST_RUN = f"""
import sys
from streamlit.testing.v1 import AppTest
AppTest.from_string("import streamlit as st\\nst.write(1)").run()  # AppTest's own first-run imports
from posviz.app import warmup
warmup.start()
warmup._thread.join(timeout=240)
assert not warmup._thread.is_alive(), f"the warm-up did not end: {{warmup.timings}}"
before = set(sys.modules)
at = AppTest.from_file({str(APP)!r}, default_timeout={TIMEOUT}).run()
assert not at.exception and at.get("plotly_chart"), at.exception
print(sorted(set(sys.modules) - before), flush=True)
"""


def test_the_first_visitors_run_imports_nothing_after_the_warm_up(tmp_path):
    # without first_run_once the run imports PIL.ImageFile and streamlit.material_icon_names (and, for a
    # visitor who comes before the warm-up's default views, plotly's figure classes and JSON encoder)
    done = subprocess.run([sys.executable, "-c", _FIRST_RUN], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, POSVIZ_CACHE_DIR=str(tmp_path), HF_HUB_OFFLINE="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_app_py_is_an_st_app_with_the_warm_up_as_its_lifespan_and_the_preload_as_its_middleware():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(APP)
    assert found.is_asgi_app and found.import_string == "app:app"
    calls = [node for node in ast.walk(ast.parse(APP.read_text())) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "App"]
    assert {kw.arg: ast.unparse(kw.value) for kw in calls[0].keywords} == {
        "lifespan": "warmup.lifespan", "middleware": "[Middleware(warmup.Requests), Middleware(Preload)]"}


def _own_gates():
    """A copy of posviz.app.gates of the test's own: the process's warm-up (started by the AppTest
    runs) sets the module's events at any time."""
    spec = importlib.util.find_spec("posviz.app.gates")
    gates = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gates)
    return gates


@pytest.mark.parametrize("stage", ["imported", "libraries"])
def test_a_run_waits_only_where_a_warm_up_started(stage):
    gates = _own_gates()
    wait = gates.wait_for_imports if stage == "imported" else gates.wait_for_libraries
    assert wait(timeout=0)  # no warm-up: nothing to wait for
    gates.expect()
    assert not wait(timeout=0.01)  # a warm-up that has not got there yet
    getattr(gates, stage).set()
    assert wait(timeout=0)


def _imports_begin(gates, requests_for: float, every: float = 0.05, run_at: float | None = None) -> float:
    """Seconds until ``gates.before_imports()`` (in a thread, as the warm-up calls it) returns while
    requests arrive every ``every`` seconds for ``requests_for`` seconds (a browser loading the page),
    the last of them a websocket, and that browser's script run begins after ``run_at`` seconds
    (None: no websocket, no run)."""
    began = time.monotonic()
    thread = threading.Thread(target=gates.before_imports)
    thread.start()
    connected = ran = False
    while thread.is_alive() and time.monotonic() - began < 30:
        elapsed = time.monotonic() - began
        if elapsed < requests_for:
            gates.requested()
        elif run_at is not None and not connected:
            gates.requested(websocket=True)
            connected = True
        if run_at is not None and elapsed >= run_at and not ran:
            with gates.visiting():
                ran = True
        time.sleep(every)
    thread.join()
    return time.monotonic() - began


def test_the_imports_wait_until_the_server_has_been_quiet():
    gates = _own_gates()
    gates.QUIET_S, gates.MOST_S = 0.5, 20.0
    assert gates.QUIET_S <= _imports_begin(gates, requests_for=0) < 2.0  # an idle server: soon
    loading = _imports_begin(gates, requests_for=1.5)  # a browser loading the frontend
    assert 1.5 + gates.QUIET_S - 0.1 <= loading < 1.5 + gates.QUIET_S + 2.0


def test_the_imports_wait_for_a_connected_browsers_first_run_and_a_busy_server_within_most_s():
    gates = _own_gates()
    gates.QUIET_S, gates.MOST_S = 0.5, 20.0
    assert 3.0 <= _imports_begin(gates, requests_for=0.2, run_at=3.0) < 3.0 + gates.QUIET_S + 2.0
    gates = _own_gates()
    gates.QUIET_S, gates.MOST_S = 0.5, 1.0
    assert 1.0 <= _imports_begin(gates, requests_for=30) < 3.0  # requests that never stop


def test_the_middleware_counts_requests_and_websockets_and_passes_them_on(monkeypatch):
    from posviz.app import gates, warmup

    counted, passed = [], []
    monkeypatch.setattr(gates, "requested", lambda websocket=False: counted.append(websocket))

    async def app(scope, receive, send):
        passed.append(scope["type"])
        await send({"type": "done"})

    sent = []

    async def send(message):
        sent.append(message)

    middleware = warmup.Requests(app)
    for kind in ("http", "websocket", "lifespan"):
        asyncio.run(middleware({"type": kind}, None, send))
    assert passed == ["http", "websocket", "lifespan"] and counted == [False, True]
    assert sent == [{"type": "done"}] * 3
