"""The app as a real server, driven by Chromium: what a visitor waits for and what is sent to them.

The server is ``streamlit run app.py`` through :mod:`bench.serve` (which logs each script run's
server time and each forward pass to a file), offline on the bundled model, on a free port.
Chromium is Debian's (``tests.support.browser.chromium``), driven by Playwright. Every page visit
records the websocket frames the browser receives from the server (one Streamlit ``ForwardMsg``
each); a chart's bytes are the size of the frame that carries it.

Times are ``time.perf_counter()`` seconds measured in this process; sizes are bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bench import LONG_TEXT, ROOT
from bench.serve import read_events
from posviz.app import first_paint
from tests.support.browser import CHROMIUM_ARGS, chromium, free_port, log_tail, stop

CHART = '[data-testid="stPlotlyChart"] .js-plotly-plot .main-svg'
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
#: Whether the script has finished (:data:`IDLE` is on the page).
IDLE_JS = f"() => document.querySelector('{IDLE}') !== null"
FAILED = '[data-testid="stException"], [data-testid="stAlertContentError"]'
TITLES_JS = "() => Array.from(document.querySelectorAll('.js-plotly-plot .gtitle'), e => e.textContent).join('|')"
#: Whether an element matching the selector given is visible as Playwright means it: a box that is
#: not empty, and not ``visibility: hidden``.
VISIBLE_JS = """selector => Array.from(document.querySelectorAll(selector)).some(e => {
  const box = e.getBoundingClientRect();
  return box.width > 0 && box.height > 0 && getComputedStyle(e).visibility !== "hidden";
})"""
#: Bytes of the note above a stored first chart: it was shown.
FIRST_PAINT = first_paint.STORED_NOTE.encode()
START_TIMEOUT_S = 120
PAGE_TIMEOUT_MS = 180_000
#: The app is "up" this long before the projection page is opened (the UMAP goal).
UP_S = 30.0
#: Samples of each cheap measurement of a server, for a median less at the mercy of one slow moment
#: (the machine's own noise is some ±40 ms on a rerun, ±0.3 s on a page load): page loads of the
#: floor's warm server, and key presses of each rerun case (three layers up; q = 200, 300, 400).
SAMPLES = 3

#: Page visits after the cold start, by name: the URL path (the projection page with PCA here; UMAP
#: is measured on its own). Every page of app.py's st.navigation that draws a chart.
PAGES = {
    "model": "/",
    "similarity": "/similarity",
    "projection (PCA)": "/projection?method=PCA",
    "input": "/input",
    "attention": "/attention",
    "compare": "/compare",
    "word order": "/word_order",
    "properties": "/properties",
    "probes": "/probes",
    "attention, 512 tokens": "/attention?" + urllib.parse.urlencode({"text": LONG_TEXT, "text_pair": ""}),
}


class NoBrowser(RuntimeError):
    """No Chromium on this machine (or Playwright missing): the browser cases are skipped."""


@dataclass
class Server:
    """A running app: its URL, when its process was started (``perf_counter`` s, and ``time.time``
    s as its events log them), when it first answered its health check (``perf_counter`` s) and its logs."""

    base: str
    started: float
    started_epoch: float
    healthy: float
    events: Path
    log: Path
    proc: subprocess.Popen

    def events_since(self, count: int) -> list[dict]:
        """:mod:`bench.serve` events after the first ``count``."""
        return read_events(self.events)[count:]

    def wait_run(self, count: int, timeout_s: float = 30.0) -> list[dict]:
        """The events after the first ``count`` once a script run is among them (the server logs a
        run after its clean-up), or after ``timeout_s``."""
        deadline = time.perf_counter() + timeout_s
        while True:
            events = self.events_since(count)
            if any(e["event"] == "run" for e in events) or time.perf_counter() > deadline:
                return events
            time.sleep(0.05)

    def event_count(self) -> int:
        """How many events the server has written so far."""
        return len(read_events(self.events))


#: The floor: a bare Streamlit page with one plotly chart, what no Streamlit app can beat.
FLOOR_SCRIPT = """import numpy as np
import plotly.graph_objects as go
import streamlit as st

st.plotly_chart(go.Figure(go.Heatmap(z=np.random.default_rng(0).random((64, 64)))))
"""


@contextlib.contextmanager
def app_server(workdir: Path, floor: bool = False, cache: Path | None = None):
    """Start the app (see the module docstring), or with ``floor`` :data:`FLOOR_SCRIPT` by plain
    ``streamlit run`` with the same options; yield a :class:`Server` once ``/_stcore/health``
    answers (polled every 50 ms); stop it afterwards. The app's cache folder (``POSVIZ_CACHE_DIR``,
    where it stores its first chart: :mod:`posviz.app.first_paint`) is ``cache``, default
    ``workdir/cache``: the bench's servers share it, as restarts of one server do."""
    port = free_port()
    fd, events = tempfile.mkstemp(prefix="events-", suffix=".jsonl", dir=workdir)
    os.close(fd)
    log = Path(events).with_suffix(".log")
    script = "app.py"
    if floor:
        script = str(Path(events).with_suffix(".py"))
        Path(script).write_text(FLOOR_SCRIPT)
    cmd = [sys.executable, "-m", "streamlit" if floor else "bench.serve", "run", script, "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               POSVIZ_BENCH_EVENTS=events, POSVIZ_CACHE_DIR=str(cache or workdir / "cache"))
    with open(log, "w") as out:
        started, started_epoch = time.perf_counter(), time.time()
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", started, started_epoch, 0.0, Path(events), log, proc)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"streamlit exited with {proc.returncode}:\n{log_tail(log)}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"{server.base}/_stcore/health", timeout=2) as reply:
                    if reply.read().decode().strip() == "ok":
                        server.healthy = time.perf_counter()
                        break
            if time.perf_counter() - started > START_TIMEOUT_S:
                raise RuntimeError(f"streamlit not healthy after {START_TIMEOUT_S} s:\n{log_tail(log)}")
            time.sleep(0.05)
        yield server
    finally:
        stop(proc)


@contextlib.contextmanager
def chromium_browser():
    """Headless Chromium through Playwright; raises :class:`NoBrowser` without one."""
    import pytest

    try:
        from playwright.sync_api import sync_playwright

        path = chromium()
    except (ImportError, pytest.skip.Exception, pytest.fail.Exception) as exc:
        raise NoBrowser(str(exc)) from exc
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Tab:
    """A browser tab with its own context (cache, cookies), recording the websocket frames it receives."""

    page: object
    frames: list[bytes] = field(default_factory=list)

    @classmethod
    @contextlib.contextmanager
    def open(cls, browser):
        """A new context and tab, 1400 x 900; closed afterwards."""
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        tab = cls(context.new_page())
        tab.page.set_default_timeout(PAGE_TIMEOUT_MS)
        tab.page.on("websocket", lambda ws: ws.on("framereceived", tab._received))
        try:
            yield tab
        finally:
            context.close()

    def _received(self, payload) -> None:
        self.frames.append(payload if isinstance(payload, bytes) else payload.encode())

    def take(self) -> list[bytes]:
        """The frames received since the last call."""
        frames, self.frames = self.frames, []
        return frames

    def titles(self) -> str:
        """The titles of the charts on the page, joined by "|"."""
        return self.page.evaluate(TITLES_JS)

    def settle(self, start: float) -> dict:
        """Wait for a chart (or an error), then for the script to finish; the times since ``start``
        and the frames received. Raises RuntimeError when the page shows an error."""
        page = self.page
        chart = self.seen(VISIBLE_JS, f"{CHART}, {FAILED}")
        idle = self.seen(IDLE_JS)
        if page.locator(FAILED).count():
            raise RuntimeError(f"{page.url}: {page.locator(FAILED).first.inner_text()[:500]}")
        frames = self.take()
        return dict(chart_at=chart, chart_s=chart - start, idle_s=idle - start, ws_bytes=sum(map(len, frames)),
                    charts=chart_frames(frames), first_paint=any(FIRST_PAINT in frame for frame in frames))

    def seen(self, condition: str, arg=None) -> float:
        """Wait until the JavaScript function ``condition`` returns true for ``arg``, checked at each
        of the page's animation frames; the ``time.perf_counter()`` of the check that saw it.

        Not Playwright's ``locator.wait_for``: it checks 0, 20, 50, 100 and 100 ms apart, then every
        500 ms, so a chart drawn more than 0.8 s after the navigation was seen 0 to 0.5 s late (the
        floor's page load measured 1.7 s or 2.2 s, nothing between)."""
        self.page.wait_for_function(condition, arg=arg, polling="raf")
        return time.perf_counter()

    def visit(self, url: str, expect: str = "") -> dict:
        """Open ``url``: :meth:`settle` timed from the navigation. Raises RuntimeError when no
        chart's title holds ``expect`` (a URL parameter the page did not take)."""
        self.take()
        start = time.perf_counter()
        self.page.goto(url)
        result = self.settle(start)
        if not any(expect in title for title in result["charts"]):
            raise RuntimeError(f"{url}: no chart titled '…{expect}…' among {list(result['charts'])}")
        return result

    def navigate(self, label: str, expect: str) -> dict:
        """Click the sidebar's link ``label`` (the app's own navigation: no page load); the time
        until a chart titled ``…expect…`` is drawn and the script has finished."""
        self.take()
        start = time.perf_counter()
        self.page.locator('[data-testid="stSidebarNav"] a').filter(has_text=label).first.click()
        chart = self.seen(f"want => ({TITLES_JS})().includes(want)", expect)
        idle = self.seen(IDLE_JS)
        frames = self.take()
        return dict(chart_s=chart - start, idle_s=idle - start, ws_bytes=sum(map(len, frames)),
                    charts=chart_frames(frames))

    def act(self, action, server: Server) -> dict:
        """Run ``action()`` (a key press, a typed value) and time it until the charts' titles have
        changed and the script has finished; with the server's script time of that rerun
        (``server_s``, the last run logged) and the forward passes it ran (``calls``)."""
        before, seen = self.titles(), server.event_count()
        self.take()
        start = time.perf_counter()
        action()
        self.seen(f"before => ({TITLES_JS})() !== before", before)
        elapsed = self.seen(IDLE_JS) - start
        frames = self.take()
        events = server.wait_run(seen)
        runs = [e for e in events if e["event"] == "run"]
        return dict(browser_s=elapsed, server_s=runs[-1]["seconds"] if runs else None,
                    server_total_s=runs[-1]["total"] if runs else None, runs=len(runs),
                    calls=[e["fn"] for e in events if e["event"] == "call"], ws_bytes=sum(map(len, frames)))


def chart_frames(frames: list[bytes]) -> dict[str, int]:
    """Bytes of each chart among ``frames`` (Streamlit ForwardMsgs), by the chart's title."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    charts = {}
    for frame in frames:
        msg = ForwardMsg()
        try:
            msg.ParseFromString(frame)
        except Exception:  # noqa: BLE001  (not a ForwardMsg: count it in the page's total only)
            continue
        element = msg.delta.new_element
        if msg.WhichOneof("type") == "delta" and element.WhichOneof("type") == "plotly_chart":
            title = json.loads(element.plotly_chart.spec).get("layout", {}).get("title", {})
            name = title.get("text", "") if isinstance(title, dict) else str(title)
            charts[name or f"chart {len(charts)}"] = len(frame)
    return charts


def press_key(tab: Tab, label: str, key: str):
    """An action for :meth:`Tab.act`: focus the thumb of the slider labelled ``label``, press ``key``."""
    thumb = tab.page.locator('[data-testid="stSlider"]').filter(has_text=label).get_by_role("slider").first
    return lambda: thumb.press(key)


def type_number(tab: Tab, label: str, value: int):
    """An action for :meth:`Tab.act`: type ``value`` into the number input labelled ``label``, then Enter."""
    box = tab.page.locator('[data-testid="stNumberInput"]').filter(has_text=label).locator("input").first

    def action():
        box.fill(str(value))
        box.press("Enter")

    return action


def first_start(browser, workdir: Path, cache: Path) -> dict:
    """A server's first start ever: an empty cache folder ``cache``, nothing stored. The first chart
    of ``/`` from the process start (``first_chart_s``, seconds; ``first_paint``: whether a stored
    chart came first, which it cannot); then, within :data:`UP_S`, until the warm-up has stored its
    first chart in ``cache`` (``stored``), for the next start."""
    with app_server(workdir, cache=cache) as server, Tab.open(browser) as tab:
        first = tab.visit(server.base + "/")
        stored = cache / first_paint.FILE_NAME
        while not stored.exists() and time.perf_counter() < server.started + UP_S:
            time.sleep(0.1)
        return dict(first_chart_s=first["chart_at"] - server.started, first_paint=first["first_paint"],
                    stored=stored.exists())


def cold_start(browser, workdir: Path, cache: Path | None = None) -> dict:
    """One fresh server (its cache folder ``cache``, as :func:`app_server`'s): the first chart of
    ``/`` from the process start (whether it was the stored first chart, and when the server
    answered, when its first script run started and how long it took); every page of
    :data:`PAGES` from its navigation (a page load, a new session); then, once the server has been
    up :data:`UP_S`, the projection page with UMAP by the sidebar (the app's warm-up, started by
    the first visit, has had its time). Times in seconds, sizes in bytes."""
    with app_server(workdir, cache=cache) as server, Tab.open(browser) as tab:
        first = tab.visit(server.base + "/")
        run = next(e for e in server.wait_run(0) if e["event"] == "run")
        out = dict(first_chart_s=first["chart_at"] - server.started, healthy_s=server.healthy - server.started,
                   run_start_s=run["start"] - server.started_epoch, run_s=run["seconds"],
                   first_paint=first["first_paint"], pages={})
        for name, path in PAGES.items():
            out["pages"][name] = tab.visit(server.base + path, "PCA" if "PCA" in name else "")
        time.sleep(max(0.0, server.started + UP_S - time.perf_counter()))
        out["umap_after_visit"] = tab.navigate("Projection", "UMAP")
        out["up_s"] = time.perf_counter() - server.started
    return out


def floor(browser, workdir: Path) -> dict:
    """The floor (:data:`FLOOR_SCRIPT`): its first chart from the process start
    (``first_chart_s``), then :data:`SAMPLES` page loads of the warm server, each in a new tab
    (``warm_chart_s``, a list), seconds."""
    with app_server(workdir, floor=True) as server:
        with Tab.open(browser) as tab:
            first = tab.visit(server.base + "/")
        warm = []
        for _ in range(SAMPLES):
            with Tab.open(browser) as tab:
                warm.append(tab.visit(server.base + "/")["chart_s"])
    return dict(first_chart_s=first["chart_at"] - server.started, warm_chart_s=warm)


def idle_server(browser, workdir: Path) -> dict:
    """One fresh server left alone for :data:`UP_S`, then: the model page (the first visit of the
    server) and, by the sidebar, the projection page with UMAP (the server's first UMAP); in a new
    tab, the projection page by its link; the model page and the projection page again by the
    sidebar (warm); a reload; a 3-D UMAP (computed anew); the attention page's layer slider (one
    key press up, :data:`SAMPLES` times) for the default sentence and for 512 tokens; q on the
    similarity page (:data:`SAMPLES` values), each a list of :meth:`Tab.act`'s measurements. Times
    in seconds, sizes in bytes."""
    with app_server(workdir) as server:
        time.sleep(max(0.0, server.started + UP_S - time.perf_counter()))
        with Tab.open(browser) as tab:
            out = dict(first_visit=tab.visit(server.base + "/"))
            out["umap_first"] = tab.navigate("Projection", "UMAP")
        with Tab.open(browser) as tab:
            out.update(_idle_visits(tab, server))
    return out


def _idle_visits(tab: Tab, server: Server) -> dict:
    """The visits of :func:`idle_server` after its first tab."""
    out = dict(umap_link=tab.visit(server.base + "/projection", "UMAP"))
    tab.navigate("Model", "Length of each position embedding")
    out["umap_again"] = tab.navigate("Projection", "UMAP")
    start = time.perf_counter()
    tab.page.reload()
    out["umap_reload"] = tab.settle(start)
    out["umap_3d"] = tab.visit(server.base + "/projection?dims=3")
    tab.visit(server.base + "/attention")
    out["layer_slider"] = [tab.act(press_key(tab, "Layer", "ArrowRight"), server) for _ in range(SAMPLES)]
    tab.visit(server.base + PAGES["attention, 512 tokens"])
    out["layer_slider_512"] = [tab.act(press_key(tab, "Layer", "ArrowRight"), server) for _ in range(SAMPLES)]
    tab.visit(server.base + "/similarity")
    out["similarity_q"] = [tab.act(type_number(tab, "q", 200 + 100 * k), server) for k in range(SAMPLES)]
    return out
