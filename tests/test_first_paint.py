"""The stored first chart (posviz.app.first_paint): it is the model page's own first chart, it is
shown only where it fits the visit and the code, and a fresh server shows it before torch is imported."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import logging
import sys
import threading
import time
import types

import pytest
from streamlit.testing.v1 import AppTest

from posviz.app import first_paint, gates
from tests.support.apptest import TIMEOUT, apptest_like_browser, figures, open_page  # noqa: F401
from tests.support.browser import browser  # noqa: F401  the module's Chromium (a fixture)
from tests.support.browser import CHART, IDLE, ROOT, log_tail, new_page, running_app

ROOT_URL = "http://127.0.0.1:8501"


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A cache folder of the test's own, once the process's warm-up (started by any AppTest run) has
    stored its chart: it must not write into this folder while the test looks at it."""
    from posviz.app import warmup

    deadline = time.monotonic() + 120
    while warmup.started_at is not None and "first paint" not in warmup.timings and time.monotonic() < deadline:
        time.sleep(0.1)
    monkeypatch.setenv("POSVIZ_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_the_stored_chart_is_the_model_pages_first_chart(bundled_lm, cache_dir):
    first_paint.store(bundled_lm)
    doc = first_paint.stored(ROOT_URL, params=False)
    assert doc is not None and doc["key"] == first_paint.key() and doc["model"] == "all-MiniLM-L6-v2 (bundled)"
    at = open_page("model")
    chart = at.get("plotly_chart")[0].proto
    assert json.loads(chart.spec) == doc["figure"]
    assert json.loads(chart.config) == doc["config"] and doc["aspect"] is None
    assert doc["figure"]["layout"]["title"]["text"] == "Length of each position embedding"
    assert len(doc["figure"]["data"][0]["y"]["bdata"]) > 0  # the 512 lengths travel as a typed array


def _draw(doc):
    """A script run of :func:`first_paint.draw` alone, its note in the sidebar."""
    import streamlit as st

    from posviz.app import first_paint

    first_paint.draw(doc, st.sidebar.empty())


def test_the_drawn_chart_is_the_stored_one(bundled_lm, cache_dir):
    first_paint.store(bundled_lm)
    doc = first_paint.stored(ROOT_URL + "/", params=False)

    at = AppTest.from_function(_draw, args=(doc,), default_timeout=TIMEOUT).run()
    page = open_page("model")  # the page that follows: the same head, the same chart
    assert [t.value for t in at.title] == [t.value for t in page.title] == ["Model"]
    assert [m.value for m in at.markdown][:2] == [m.value for m in page.markdown][:2] == [
        "**all-MiniLM-L6-v2 (bundled)**", "**Positional scheme:** learned absolute position embeddings"]
    drawn, facts = [(m.label, m.value) for m in at.metric], [(m.label, m.value) for m in page.metric]
    assert [label for label, _ in drawn] == [label for label, _ in facts] and len(facts) == 10
    assert [value for _, value in drawn] == [
        "…" if label in ("Device", "Load time") else value for label, value in facts]  # those of one start pending
    assert [x.value for x in at.latex] == [x.value for x in page.latex] and len(page.latex) == 1  # the formula
    assert [c.value for c in at.main.caption] == [c.value for c in page.main.caption][:1]  # and its description
    assert [i.value for i in at.sidebar.info] == [first_paint.NOTE + first_paint.STORED_NOTE] and not at.main.info
    assert figures(at) == [doc["figure"]]


def test_the_stored_chart_waits_while_the_warm_up_imports_what_plotly_looks_up(bundled_lm, cache_dir):
    """A first visit while the warm-up imports pandas: plotly takes pandas from sys.modules as it is, half
    initialised (no ``Series`` yet), and the chart failed with an AttributeError; it now waits for the import."""
    first_paint.store(bundled_lm)
    doc = first_paint.stored(ROOT_URL, params=False)
    real, half = importlib.import_module("pandas"), types.ModuleType("pandas")  # pandas as another thread sees it mid-import
    importing = threading.Event()

    def warm_up():
        with gates.plotly_lookups:
            sys.modules["pandas"] = half
            importing.set()
            try:
                time.sleep(1.5)
            finally:
                sys.modules["pandas"] = real

    thread = threading.Thread(target=warm_up)
    thread.start()
    importing.wait()
    at = AppTest.from_function(_draw, args=(doc,), default_timeout=TIMEOUT).run()
    thread.join()
    assert not at.exception, [e.value for e in at.exception]
    assert figures(at) == [doc["figure"]]


@pytest.mark.parametrize("url, params", [(None, False), (ROOT_URL, True), (ROOT_URL + "/similarity", False),
                                         (ROOT_URL + "/attention", False)])
def test_only_a_visit_of_the_model_page_without_parameters_gets_it(bundled_lm, cache_dir, url, params):
    first_paint.store(bundled_lm)
    assert first_paint.stored(ROOT_URL, params=False) is not None
    assert first_paint.stored(url, params=params) is None


def test_a_chart_of_other_code_or_versions_is_not_shown(bundled_lm, cache_dir, monkeypatch):
    first_paint.store(bundled_lm)
    path = cache_dir / first_paint.FILE_NAME
    doc = json.loads(path.read_text())
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version",
                        lambda name: "0.0.0" if name == "plotly" else real(name))
    assert first_paint.key.__wrapped__() != doc["key"]  # another plotly draws the JSON its own way
    path.write_text(json.dumps(dict(doc, key="0" * 16)))
    assert first_paint.stored(ROOT_URL, params=False) is None
    path.write_text("{ not json")
    assert first_paint.stored(ROOT_URL, params=False) is None
    first_paint.store(bundled_lm)  # a broken or stale file is replaced
    assert first_paint.stored(ROOT_URL, params=False) == doc


def test_a_folder_that_cannot_be_written_is_logged_not_raised(bundled_lm, tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("POSVIZ_CACHE_DIR", str(blocker / "posviz"))
    with caplog.at_level(logging.WARNING, logger="posviz.app.first_paint"):
        first_paint.store(bundled_lm)
    assert "cannot store the first chart" in caplog.text
    assert first_paint.stored(ROOT_URL, params=False) is None


def test_a_run_with_no_stored_chart_gets_the_note_alone():
    def script():
        from posviz.app import first_paint

        first_paint.draw(None, None)

    at = AppTest.from_function(script, default_timeout=TIMEOUT).run()
    assert [i.value for i in at.info] == [first_paint.NOTE]
    assert not at.title and not at.get("plotly_chart")


def test_the_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("POSVIZ_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert first_paint.folder() == tmp_path / "posviz"
    monkeypatch.setenv("POSVIZ_CACHE_DIR", "~/elsewhere")
    assert str(first_paint.folder()).endswith("/elsewhere") and "~" not in str(first_paint.folder())


#: Logs the drawn charts, metrics and the starting note at every change of the page.
_DRAWN_LOG = """window.drawnLog = [];
new MutationObserver(() => {
  const now = [document.querySelectorAll('.js-plotly-plot .main-svg').length,
               document.querySelectorAll('[data-testid="stMetric"]').length,
               document.body.innerText.includes('Starting:') ? 1 : 0, performance.now() | 0];
  const last = window.drawnLog[window.drawnLog.length - 1];
  if (!last || last[0] !== now[0] || last[1] !== now[1] || last[2] !== now[2]) window.drawnLog.push(now);
}).observe(document, {subtree: true, childList: true});"""


@pytest.mark.browser
def test_a_fresh_server_draws_the_stored_chart_then_the_page(bundled_lm, cache_dir, browser):  # noqa: F811
    first_paint.store(bundled_lm)
    log = ROOT / "artifacts" / "streamlit-first-paint.log"
    with running_app(log, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", POSVIZ_CACHE_DIR=str(cache_dir)) as (base, _), \
            new_page(browser, 1024, 768) as page:
        page.add_init_script(_DRAWN_LOG)
        page.goto(base + "/")
        note = page.get_by_text(first_paint.STORED_NOTE.strip())
        note.wait_for(state="visible")  # the warm-up takes seconds on 2 cores; the browser's first run comes before
        page.locator(CHART).first.wait_for(state="visible")
        assert page.get_by_text("…", exact=True).count() == 2, log_tail(log)  # not the page yet: no load time
        assert page.locator('[data-testid="stSidebarNav"]').is_hidden()  # no list of pages/ files meanwhile
        before = page.locator(CHART).first.bounding_box()
        page.locator(IDLE).wait_for(state="attached")
        assert note.count() == 0, log_tail(log)
        page.get_by_text("Load time").wait_for(state="visible")
        assert page.get_by_text("…", exact=True).count() == 0
        assert page.locator('[data-testid="stSidebarNav"]').is_visible()
        assert page.locator('[data-testid="stPlotlyChart"]').count() == 1
        after = page.locator(CHART).first.bounding_box()
        assert abs(after["y"] - before["y"]) <= 2 and abs(after["width"] - before["width"]) <= 2, (before, after)
        drawn = page.evaluate("window.drawnLog")  # [charts' svg layers, metrics, note, ms] at every change
        shown = drawn[next(i for i, (charts, *_) in enumerate(drawn) if charts):]
        # the head never blank from the stored chart on (the page drawn under it, then it goes); the chart
        # is redrawn, plotly.js's few frames
        assert all(metrics >= 10 for _, metrics, *_ in shown) and shown[-1][:3] == [3, 10, 0], str(drawn)


#: Logs the names of the sidebar's page links whenever they change.
_NAV_LOG = """window.navLog = [];
new MutationObserver(() => {
  const links = [...document.querySelectorAll('[data-testid="stSidebarNav"] a')];
  const names = links.map(a => a.innerText.trim().split('\\n').pop().trim()).join('|');  // the label after its icon
  if (window.navLog[window.navLog.length - 1] !== names) window.navLog.push(names);
}).observe(document, {subtree: true, childList: true});"""


@pytest.mark.browser
def test_a_fresh_servers_first_visit_of_a_page_runs_the_app_with_its_note(cache_dir, browser):  # noqa: F811
    # Streamlit runs such a visit as the page's file alone where it takes pages/ for an old-style multipage
    # app (its list of files in the sidebar, no note, the app's imports in the visitor's run)
    log = ROOT / "artifacts" / "streamlit-first-visit-of-a-page.log"
    with running_app(log, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", POSVIZ_CACHE_DIR=str(cache_dir)) as (base, _), \
            new_page(browser, 1024, 768) as page:
        page.add_init_script(_NAV_LOG)
        page.goto(base + "/attention")
        page.get_by_text(first_paint.NOTE).wait_for(state="visible", timeout=5000)  # soon, not after the imports
        page.locator(CHART).first.wait_for(state="visible")
        page.locator(IDLE).wait_for(state="attached")
        names = [names for names in page.evaluate("window.navLog") if names]
        assert names and all(n.split("|")[:2] == ["Model", "Gallery"] for n in names), (names, log_tail(log))
