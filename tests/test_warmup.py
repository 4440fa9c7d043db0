"""The app's startup (posviz.app.warmup): what the warm-up computes is what a first visitor of each
page would otherwise compute, and the app's entry is an st.App that ``streamlit run`` serves."""

from __future__ import annotations

import ast
import importlib.util

import pytest
from streamlit.testing.v1 import AppTest

from posviz.app import caches
from posviz.views import positions
from tests.support.apptest import APP, TIMEOUT, apptest_like_browser, assert_clean, open_page  # noqa: F401


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

    for module, name in ((caches, "attention"), (caches, "input_representation"), (positions, "matrix"),
                         (positions, "projection_coordinates")):
        counting(module, name)
    for page in ("similarity", "input", "attention", "projection"):
        assert_clean(open_page(page), page)
    assert calls == [], f"the first visits computed {calls}: the warm-up's defaults are not the pages'"


def test_app_py_is_an_st_app_with_the_warm_up_as_its_lifespan_and_the_preload_as_its_middleware():
    from streamlit.web.server.app_discovery import discover_asgi_app

    found = discover_asgi_app(APP)
    assert found.is_asgi_app and found.import_string == "app:app"
    calls = [node for node in ast.walk(ast.parse(APP.read_text())) if isinstance(node, ast.Call)
             and getattr(node.func, "attr", "") == "App"]
    assert {kw.arg: ast.unparse(kw.value) for kw in calls[0].keywords} == {
        "lifespan": "warmup.lifespan", "middleware": "[Middleware(Preload)]"}


@pytest.mark.parametrize("stage", ["imported", "libraries"])
def test_a_run_waits_only_where_a_warm_up_started(stage):
    # A copy of the module of its own: the process's warm-up (started by the AppTest runs) sets the
    # module's events at any time.
    spec = importlib.util.find_spec("posviz.app.gates")
    gates = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gates)
    wait = gates.wait_for_imports if stage == "imported" else gates.wait_for_libraries
    assert wait(timeout=0)  # no warm-up: nothing to wait for
    gates.expect()
    assert not wait(timeout=0.01)  # a warm-up that has not got there yet
    getattr(gates, stage).set()
    assert wait(timeout=0)
