"""The chart module preloaded with the page (posviz.app.preload): found in Streamlit's frontend build,
named in a Link header of every HTML response and of nothing else, and fetched by Chromium before
the page's websocket opens."""

from __future__ import annotations

import asyncio
import os
import urllib.request

import pytest

from posviz.app import preload
from tests.support.browser import browser  # noqa: F401  the module's Chromium (a fixture)
from tests.support.browser import ROOT, new_page, running_app


def test_the_installed_streamlit_build_has_the_modules_and_each_path_names_one_of_its_files():
    from streamlit import file_util

    paths = preload.module_paths()
    assert [os.path.basename(p).split(".")[0] for p in paths] == list(preload.MODULES)
    for path in paths:
        assert path.startswith("./static/js/")
        assert os.path.isfile(os.path.join(file_util.get_static_dir(), path.removeprefix("./")))


def test_a_build_without_them_preloads_nothing_and_the_first_match_is_taken(tmp_path):
    assert preload.module_paths(str(tmp_path)) == []
    (tmp_path / "static" / "js").mkdir(parents=True)
    for name in ("PlotlyChart.b.js", "PlotlyChart.a.js", "PlotlyChartFoo.js"):
        (tmp_path / "static" / "js" / name).write_text("")
    assert preload.module_paths(str(tmp_path)) == ["./static/js/PlotlyChart.a.js"]


def test_the_header_lists_each_module_as_a_module_preload():
    assert preload.link_header(["./static/js/A.1.js", "./static/js/B.2.js"]) == (
        "<./static/js/A.1.js>; rel=modulepreload; crossorigin, <./static/js/B.2.js>; rel=modulepreload; crossorigin")


def _served(middleware, scope, content_type: bytes | None):
    """The messages ``middleware`` sends for one request to an app that answers ``content_type``."""
    sent = []

    async def app(scope, receive, send):
        if content_type is not None:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", content_type)]})
            await send({"type": "http.response.body", "body": b"x"})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.disconnect"}

    asyncio.run(middleware(app, paths=["./static/js/P.1.js"])(scope, receive, send))
    return sent


@pytest.mark.parametrize("content_type, linked", [(b"text/html; charset=utf-8", True), (b"text/javascript", False),
                                                  (b"application/json", False)])
def test_only_html_responses_get_the_header(content_type, linked):
    start, body = _served(preload.Preload, {"type": "http", "method": "GET", "path": "/similarity"}, content_type)
    links = [v for k, v in start["headers"] if k == b"link"]
    assert links == ([b"<./static/js/P.1.js>; rel=modulepreload; crossorigin"] if linked else [])
    assert body == {"type": "http.response.body", "body": b"x"}


def test_websockets_and_the_lifespan_pass_untouched():
    seen = []

    async def app(scope, receive, send):
        seen.append((scope["type"], send))

    async def send(message):
        pass

    for kind in ("websocket", "lifespan"):
        asyncio.run(preload.Preload(app, paths=["./a.js"])({"type": kind}, None, send))
    assert [(kind, fn is send) for kind, fn in seen] == [("websocket", True), ("lifespan", True)]


@pytest.mark.browser
def test_chromium_fetches_the_chart_module_before_the_websocket_opens(browser):  # noqa: F811
    log = ROOT / "artifacts" / "streamlit-preload-test.log"
    with running_app(log, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1") as (base, _):
        with urllib.request.urlopen(base + "/similarity") as reply:
            assert reply.headers["Link"] == preload.link_header(preload.module_paths())
        with new_page(browser) as page:
            events = []
            page.on("request", lambda r: events.append(("request", r.url)))
            page.on("websocket", lambda ws: events.append(("websocket", ws.url)))
            page.goto(base + "/")
            page.locator('[data-testid="stPlotlyChart"] .main-svg').first.wait_for(state="visible")
    names = [url.rsplit("/", 1)[-1] if kind == "request" else kind for kind, url in events]
    chart_module = os.path.basename(preload.module_paths()[0])
    assert chart_module in names and "websocket" in names
    assert names.index(chart_module) < names.index("websocket")
